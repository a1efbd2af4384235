// soak_phases - a program whose allocation sizes shift in phases, run on
// several threads for a fixed number of operations, that reports its
// resident memory over time: the measure of whether an allocator gives
// memory back and reuses it across size classes (issue 13).
//
// Each phase draws block sizes from one band (16-64 B, 65-256, 257-1024,
// 1-4 KiB, 4-16 KiB, 16-128 KiB, in turn), fills each thread's share of
// --phase-mb to its target, then churns (a random block freed, a new one
// made) until the phase's operations are spent. At the phase's end a tenth
// of its blocks survive into the next phase, handed to the next thread,
// which frees them there (cross-thread frees); the rest are freed. After
// the last phase everything is freed and the program idles --idle-ms, then
// reads its resident memory once more.
//
// Every block carries a tag (a word every 256 bytes and its last word,
// from its address and a per-block number) written when it is made and
// checked when it is freed: a block whose contents did not survive is a
// one-line error, exit 1. The program's own bookkeeping (8 bytes a block)
// lives in mappings of its own, outside malloc; its resident pages are
// subtracted from every figure printed, so the figures are the heap's.
//
//   soak_phases [--threads T] [--phases P] [--ops N] [--phase-mb M]
//               [--idle-ms I] [--sample-ms S] [--seed S]
//   prints: "sample <ms> <rss bytes> <phase>" lines every --sample-ms, then
//   soak_phases threads=T phases=P ops=N peak_rss_bytes=B
//               freed_rss_bytes=B idle_rss_bytes=B blocks_checked=N
// (peak: the highest sample; freed: right after the last free; idle: after
// --idle-ms more.)
#include <atomic>
#include <barrier>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "app_args.h"

namespace {

constexpr struct {
  std::size_t lo, hi;
} kBands[] = {{16, 64}, {65, 256}, {257, 1024}, {1025, 4096}, {4097, 16384}, {16385, 131072}};
constexpr std::size_t kBandCount = sizeof kBands / sizeof kBands[0];
constexpr std::size_t kStride = 256; // bytes between tagged words

/// Block records (a pointer each, the size in the block's first word),
/// in a mapping outside malloc whose resident bytes are known.
class Records {
public:
  explicit Records(std::size_t cap) : cap_(cap) {
    void *m = ::mmap(nullptr, cap * sizeof(void *), PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      std::fputs("soak_phases: cannot map the block records\n", stderr);
      std::exit(1);
    }
    p_ = static_cast<char **>(m);
  }
  std::size_t size() const { return n_; }
  char *operator[](std::size_t i) const { return p_[i]; }
  void push(char *b) {
    if (n_ == cap_) {
      std::fputs("soak_phases: too many blocks for the records\n", stderr);
      std::exit(1);
    }
    p_[n_++] = b;
    if (n_ > hi_)
      hi_.store(n_, std::memory_order_relaxed);
  }
  /// Removes record i (the last takes its place) and returns it.
  char *take(std::size_t i) {
    char *b = p_[i];
    p_[i] = p_[--n_];
    return b;
  }
  /// Gives the records' pages back (all records must be gone).
  void discard() {
    ::madvise(p_, cap_ * sizeof(void *), MADV_DONTNEED);
    hi_.store(0, std::memory_order_relaxed);
  }
  /// Bytes of the mapping that may be resident.
  std::size_t residentBytes() const {
    const std::size_t b = hi_.load(std::memory_order_relaxed) * sizeof(void *);
    return (b + 4095) & ~std::size_t{4095};
  }

private:
  char **p_ = nullptr;
  std::size_t cap_, n_ = 0;
  std::atomic<std::size_t> hi_{0};
};

std::uint64_t tagOf(const char *b, std::size_t off) {
  std::uint64_t x = reinterpret_cast<std::uintptr_t>(b) ^ (off * 0x9E3779B97F4A7C15ull);
  x ^= x >> 29;
  return x * 0xBF58476D1CE4E5B9ull;
}

char *makeBlock(std::size_t bytes) {
  auto *b = static_cast<char *>(std::malloc(bytes));
  if (!b) {
    std::fprintf(stderr, "soak_phases: malloc(%zu) failed\n", bytes);
    std::exit(1);
  }
  const std::uint64_t size = bytes;
  std::memcpy(b, &size, 8);
  for (std::size_t off = kStride; off + 16 <= bytes; off += kStride) {
    const std::uint64_t t = tagOf(b, off);
    std::memcpy(b + off, &t, 8);
  }
  const std::uint64_t last = tagOf(b, bytes - 8);
  std::memcpy(b + bytes - 8, &last, 8);
  return b;
}

std::atomic<std::uint64_t> g_checked{0};

/// Checks a block's tags and frees it; returns its size.
std::size_t freeBlock(char *b) {
  std::uint64_t size = 0;
  std::memcpy(&size, b, 8);
  bool ok = size >= kBands[0].lo && size <= kBands[kBandCount - 1].hi;
  for (std::size_t off = kStride; ok && off + 16 <= size; off += kStride) {
    std::uint64_t t;
    std::memcpy(&t, b + off, 8);
    ok = t == tagOf(b, off);
  }
  if (ok) {
    std::uint64_t t;
    std::memcpy(&t, b + size - 8, 8);
    ok = t == tagOf(b, size - 8);
  }
  if (!ok) {
    std::fprintf(stderr, "soak_phases: the block at %p did not keep its contents\n",
                 static_cast<void *>(b));
    std::exit(1);
  }
  std::free(b);
  g_checked.fetch_add(1, std::memory_order_relaxed);
  return size;
}

std::uint64_t residentBytes() {
  FILE *f = std::fopen("/proc/self/statm", "r");
  if (!f)
    return 0;
  unsigned long long total = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &total, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

} // namespace

int main(int argc, char **argv) {
  defero_bench::AppArgs args(argc, argv, "soak_phases",
                             {"--threads", "--phases", "--ops", "--phase-mb", "--idle-ms",
                              "--sample-ms", "--seed"});
  const unsigned threads = static_cast<unsigned>(args.get("--threads", 4, 1, 64));
  const unsigned phases = static_cast<unsigned>(args.get("--phases", 12, 1, 1000));
  const std::uint64_t ops = static_cast<std::uint64_t>(args.get("--ops", 100000000, 1000, 1000000000000));
  const std::size_t phase_bytes = static_cast<std::size_t>(args.get("--phase-mb", 256, 1, 65536)) << 20;
  const unsigned idle_ms = static_cast<unsigned>(args.get("--idle-ms", 1000, 0, 600000));
  const unsigned sample_ms = static_cast<unsigned>(args.get("--sample-ms", 20, 1, 60000));
  const unsigned seed = static_cast<unsigned>(args.get("--seed", 1, 0, 1000000));

  const std::size_t share = phase_bytes / threads; // live bytes a thread aims at
  const std::size_t cap = share / kBands[0].lo + 1024;
  std::vector<Records *> live(threads), handoff(threads);
  for (unsigned t = 0; t < threads; ++t) {
    live[t] = new Records(cap);
    handoff[t] = new Records(cap / 8 + 1024);
  }
  auto ownBytes = [&] {
    std::size_t b = 0;
    for (unsigned t = 0; t < threads; ++t)
      b += live[t]->residentBytes() + handoff[t]->residentBytes();
    return b;
  };

  std::atomic<unsigned> phase{0};
  std::atomic<bool> done{false};
  const auto start = std::chrono::steady_clock::now();
  auto ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  std::uint64_t peak = 0;
  auto sample = [&] {
    const std::uint64_t rss = residentBytes();
    const std::uint64_t own = ownBytes();
    const std::uint64_t heap = rss > own ? rss - own : 0;
    if (heap > peak)
      peak = heap;
    std::printf("sample %.0f %" PRIu64 " %u\n", ms(), heap, phase.load());
    return heap;
  };
  std::thread sampler([&] {
    while (!done.load()) {
      sample();
      std::this_thread::sleep_for(std::chrono::milliseconds(sample_ms));
    }
  });

  std::barrier sync(static_cast<std::ptrdiff_t>(threads));
  const std::uint64_t ops_per = ops / (static_cast<std::uint64_t>(threads) * phases) + 1;
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      std::mt19937_64 rng(seed * 1000003ull + t);
      Records &mine = *live[t];
      std::vector<char *> inherited; // the previous thread's survivors, freed during this phase
      for (unsigned k = 0; k < phases; ++k) {
        if (t == 0)
          phase.store(k);
        const auto band = kBands[k % kBandCount];
        std::uniform_int_distribution<std::size_t> size(band.lo, band.hi);
        std::size_t bytes = 0;
        Records &in = *handoff[(t + threads - 1) % threads];
        std::size_t in_left = in.size();
        for (std::uint64_t op = 0; op < ops_per; ++op) {
          // Each op makes or frees a block; a survivor of the last phase
          // is freed every 8th op until none is left.
          if (in_left && op % 8 == 7) {
            freeBlock(in.take(--in_left));
            continue;
          }
          if (bytes < share || mine.size() == 0 || (rng() & 1)) {
            const std::size_t sz = size(rng);
            mine.push(makeBlock(sz));
            bytes += sz;
          } else {
            bytes -= freeBlock(mine.take(rng() % mine.size()));
          }
          if (bytes > share + share / 8 && mine.size())
            bytes -= freeBlock(mine.take(rng() % mine.size()));
        }
        while (in_left)
          freeBlock(in.take(--in_left));
        sync.arrive_and_wait(); // every thread has freed what it inherited
        // A tenth survives into the next phase, for the next thread (this
        // thread's handoff, which the next one emptied this phase).
        Records &out = *handoff[t];
        out.discard();
        while (mine.size()) {
          char *b = mine.take(mine.size() - 1);
          if (k + 1 < phases && rng() % 10 == 0)
            out.push(b);
          else
            freeBlock(b);
        }
        mine.discard();
        sync.arrive_and_wait(); // every handoff is ready
      }
    });
  for (auto &w : workers)
    w.join();
  done.store(true);
  sampler.join();
  const std::uint64_t freed = sample();
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
  const std::uint64_t idle = sample();
  std::printf("soak_phases threads=%u phases=%u ops=%" PRIu64 " peak_rss_bytes=%" PRIu64
              " freed_rss_bytes=%" PRIu64 " idle_rss_bytes=%" PRIu64 " blocks_checked=%" PRIu64 "\n",
              threads, phases, ops, peak, freed, idle, g_checked.load());
  return 0;
}
