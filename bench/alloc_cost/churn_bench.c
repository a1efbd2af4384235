/* churn_bench.c - allocation-bound workloads in the style of the standard
 * allocator benchmark suites, for any allocator preloaded (plain C, so the
 * same binary runs under each).
 *
 *   churn_bench churn THREADS OPS    each thread replaces random blocks of
 *                                    its own table (8..512 bytes): malloc
 *                                    and free by the owner only
 *   churn_bench larson THREADS OPS   larson/xmalloc style: every thread
 *                                    replaces random blocks of a table that
 *                                    passes to the next thread each round,
 *                                    so most frees are of blocks another
 *                                    thread allocated
 *   churn_bench large THREADS OPS    each thread replaces random blocks of
 *                                    a table of 4 with blocks of 5..25 MiB,
 *                                    every page of each written (large
 *                                    buffers that come and go: a mapping
 *                                    per block pays its page faults each
 *                                    time)
 *
 * Prints "churn_bench MODE threads=T ops=N time_ms=X checksum=C". The
 * checksum (a sum over the bytes written) is the same under every
 * allocator. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kSlots = 4096, kLargeSlots = 4, kRounds = 16, kMaxThreads = 256 };

struct Table {
  unsigned char *block[kSlots];
  unsigned size[kSlots];
};

static int larson, large;
static unsigned threads;
static unsigned long ops_per_thread;
static struct Table tables[kMaxThreads];
static pthread_barrier_t barrier;
static uint64_t sums[kMaxThreads];

static uint64_t next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void *worker(void *arg) {
  const unsigned id = (unsigned)(uintptr_t)arg;
  uint64_t rng = 0x9E3779B97F4A7C15ull * (id + 1), sum = 0;
  const unsigned long per_round = ops_per_thread / kRounds;
  for (unsigned round = 0; round < kRounds; ++round) {
    /* larson: this round's table was another thread's last round */
    struct Table *t = &tables[larson ? (id + round) % threads : id];
    for (unsigned long i = 0; i < per_round; ++i) {
      const unsigned k = (unsigned)(next(&rng) % (large ? kLargeSlots : kSlots));
      if (t->block[k]) {
        sum += t->block[k][0] + t->block[k][t->size[k] - 1];
        free(t->block[k]);
      }
      const unsigned n = large ? (5u << 20) + (unsigned)(next(&rng) % (20u << 20))
                               : 8 + (unsigned)(next(&rng) % 505);
      unsigned char *p = malloc(n);
      if (!p) {
        fprintf(stderr, "churn_bench: malloc(%u) returned NULL\n", n);
        exit(1);
      }
      if (large)
        for (unsigned o = 0; o < n; o += 4096)
          p[o] = (unsigned char)o;
      p[0] = (unsigned char)k;
      p[n - 1] = (unsigned char)n;
      t->block[k] = p;
      t->size[k] = n;
    }
    pthread_barrier_wait(&barrier); /* tables change hands together */
  }
  sums[id] = sum;
  return NULL;
}

static int parse(const char *s, unsigned long max, unsigned long *out) {
  char *end;
  errno = 0;
  const unsigned long v = strtoul(s, &end, 10);
  if (errno || end == s || *end || v == 0 || v > max || s[0] == '-')
    return 0;
  *out = v;
  return 1;
}

int main(int argc, char **argv) {
  unsigned long t = 0, ops = 0;
  if (argc != 4 ||
      (strcmp(argv[1], "churn") && strcmp(argv[1], "larson") && strcmp(argv[1], "large")) ||
      !parse(argv[2], kMaxThreads, &t) || !parse(argv[3], 1000000000ul, &ops)) {
    fprintf(stderr, "churn_bench: usage: churn_bench churn|larson|large THREADS(1..%d) "
                    "OPS(1..1000000000)\n", kMaxThreads);
    return 2;
  }
  larson = !strcmp(argv[1], "larson");
  large = !strcmp(argv[1], "large");
  threads = (unsigned)t;
  ops_per_thread = ops / threads < kRounds ? kRounds : ops / threads;
  pthread_t tid[kMaxThreads];
  pthread_barrier_init(&barrier, NULL, threads);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (unsigned i = 0; i < threads; ++i)
    pthread_create(&tid[i], NULL, worker, (void *)(uintptr_t)i);
  for (unsigned i = 0; i < threads; ++i)
    pthread_join(tid[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &b);
  uint64_t sum = 0;
  for (unsigned i = 0; i < threads; ++i) {
    sum += sums[i];
    for (unsigned k = 0; k < kSlots; ++k)
      free(tables[i].block[k]);
  }
  const double ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
  printf("churn_bench %s threads=%u ops=%lu time_ms=%.1f checksum=%llu\n", argv[1],
         threads, ops_per_thread * threads, ms, (unsigned long long)sum);
  return 0;
}
