/* pair_cost.c - the program whose instructions per malloc+free pair the
 * allocators are compared on (callgrind, deterministic).
 *
 * Rounds of kBatch mallocs of `size` bytes, then kBatch frees in a fixed
 * scrambled order; the loop is included in the count. Each block is linked
 * as a node of a doubly linked list (libstdc++'s {next, prev} first, the
 * container's header being `container`), so the blocks are what
 * std::list::push_back makes. With `hinted`, each malloc is preceded by the
 * neighbour hint the plugin emits for push_back (the tail), through the weak
 * hint ABI: under an allocator without Defero the call is skipped and the
 * count is malloc's. With `fused`, each node comes from the fused hint +
 * operator new the plugin's late pass emits for push_back
 * (__defero_new_hinted, kind 1: the tail is the neighbour). With `mixed`,
 * every other node is instead made for a second container with the fused
 * container hint (kind 3) that a std::map's operator[] or emplace sends:
 * a list built while a map is filled between its inserts.
 *
 *   pair_cost ROUNDS SIZE [plain|hinted|fused|mixed]
 *
 * Callgrind counts only run_rounds (--toggle-collect=run_rounds); the driver
 * (pair_cost.py) divides by ROUNDS * kBatch. Plain C, so the same binary runs
 * under every allocator preloaded. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kBatch = 1000 };

__attribute__((weak)) void __defero_hint_neighbor(const void *container,
                                                  const void *neighbor);
__attribute__((weak)) void *__defero_new_hinted(size_t size, int kind,
                                                const void *container,
                                                const void *where, int side);

enum { kPlain, kHinted, kFused, kMixed };

static void *blocks[kBatch];
static unsigned order[kBatch];
static void *container[2]; /* the list's header: {next, prev} */
static void *other[6];     /* the second container (mixed) */

/* One copy of the loop per mode (the mode is a constant in each), so the
 * plain loop costs what it always did. */
static inline __attribute__((always_inline)) void rounds_of(unsigned long rounds,
                                                            size_t size, const int mode) {
  for (unsigned long r = 0; r < rounds; ++r) {
    void **prev = container;
    for (unsigned i = 0; i < kBatch; ++i) {
      void **p;
      if (mode == kMixed && (i & 1)) {
        if (!(blocks[i] = __defero_new_hinted(size, 3, other, 0, 0)))
          abort();
        continue;
      }
      if ((mode == kFused || mode == kMixed) && prev != container) {
        p = __defero_new_hinted(size, 1, container, prev, 0);
      } else {
        if (mode == kHinted && prev != container)
          __defero_hint_neighbor(container, prev);
        p = malloc(size);
      }
      if (!p)
        abort();
      p[0] = container; /* push_back: the new tail */
      p[1] = prev;
      prev[0] = p;
      container[1] = p;
      blocks[i] = prev = p;
    }
    for (unsigned i = 0; i < kBatch; ++i)
      free(blocks[order[i]]); /* (operator delete is free under Defero) */
  }
}

__attribute__((noinline)) void run_rounds(unsigned long rounds, size_t size,
                                          int mode) {
  if (mode == kFused)
    rounds_of(rounds, size, kFused);
  else if (mode == kMixed)
    rounds_of(rounds, size, kMixed);
  else if (mode == kHinted)
    rounds_of(rounds, size, kHinted);
  else
    rounds_of(rounds, size, kPlain);
}

static int parse_ulong(const char *s, unsigned long max, unsigned long *out) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (errno || end == s || *end || v == 0 || v > max || s[0] == '-')
    return 0;
  *out = v;
  return 1;
}

int main(int argc, char **argv) {
  unsigned long rounds, size;
  if (argc < 3 || argc > 4 || !parse_ulong(argv[1], 1000000, &rounds) ||
      !parse_ulong(argv[2], 1 << 20, &size) || size < 2 * sizeof(void *) ||
      (argc == 4 && strcmp(argv[3], "plain") && strcmp(argv[3], "hinted") &&
       strcmp(argv[3], "fused") && strcmp(argv[3], "mixed"))) {
    fprintf(stderr, "pair_cost: usage: pair_cost ROUNDS(1..1000000) "
                    "SIZE(16..1048576) [plain|hinted|fused|mixed]\n");
    return 2;
  }
  const char *name = argc == 4 ? argv[3] : "plain";
  const int mode = !strcmp(name, "hinted")  ? kHinted
                   : !strcmp(name, "fused") ? kFused
                   : !strcmp(name, "mixed") ? kMixed
                                            : kPlain;
  if ((mode == kHinted && !__defero_hint_neighbor) ||
      ((mode == kFused || mode == kMixed) && !__defero_new_hinted)) {
    fprintf(stderr, "pair_cost: '%s' needs the Defero runtime (preload "
                    "libdefero.so)\n", name);
    return 2;
  }
  /* A fixed scramble (LCG-driven Fisher-Yates): the same for every run. */
  unsigned long long x = 12345;
  for (unsigned i = 0; i < kBatch; ++i)
    order[i] = i;
  for (unsigned i = kBatch - 1; i > 0; --i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    unsigned j = (unsigned)((x >> 33) % (i + 1));
    unsigned t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  run_rounds(1, size, mode); /* warm: the heap has its pages */
  run_rounds(rounds, size, mode);
  printf("pair_cost: %lu rounds of %d x %lu B %s\n", rounds, kBatch, size, name);
  return 0;
}
