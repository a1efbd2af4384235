// kernels_benchmark - the Defero paper's list and tree micro-kernels
// (section 6) as Google Benchmark benchmarks, one generic kernel per
// container, registered at run time for every allocation path this binary
// has (the libc++ container benchmarks' way):
//
//   List: warm the heap (2N node-sized objects, a random N freed), build a
//         list of N random ints alternating push_back/push_front, then
//         for_each, sort, clear.
//   Tree: warm the heap (a set of 3N keys, a random N erased), build a set
//         of N random keys, N random finds, for_each, destroy.
//
// Each phase is timed on its own and reported as a counter in nanoseconds
// per node (build_ns, for_each_ns, ...); the benchmark's own (manual) time
// is the sum of the timed phases. `checksum` must be equal for every
// allocator and path.
//
// Variants:
//   std     std::allocator: whatever malloc the process has (glibc, a
//           preloaded peer, libdefero), with the hints the build sends
//           (none; the plugin's; the patched libstdc++'s).
//   ideal   the physical limit: after the same build, the container is
//           rebuilt with its nodes contiguous in traversal order (a bump
//           arena), and the phases after the build run on that copy.
//   defero/<pred>/k<K>  defero::allocator<T, KBit<K>, Pred> (only when
//           built with DEFERO_BENCH_ALLOCATOR: the patched include path
//           passes it the node hints through allocate(n, hint)).
//
//   kernels_benchmark [--list-n=N] [--tree-n=N] [--seed=S] [benchmark flags]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tree_kernel_input.h"

#ifdef DEFERO_BENCH_ALLOCATOR
#include "defero/allocator.h"
#endif

namespace {

std::size_t list_n = 1000000;
std::size_t tree_n = 3000000;
unsigned seed = 42;

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// The ideal layout's memory: one mapping, handed out in order, released
/// all at once. Nodes allocated in traversal order sit contiguously.
class BumpArena {
public:
  explicit BumpArena(std::size_t bytes) : size_(bytes) {
    void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "kernels_benchmark: cannot map %zu bytes for the ideal layout\n", bytes);
      std::exit(1);
    }
    base_ = static_cast<char *>(p);
  }
  ~BumpArena() { ::munmap(base_, size_); }
  void *allocate(std::size_t bytes, std::size_t align) {
    used_ = (used_ + align - 1) & ~(align - 1);
    if (used_ + bytes > size_)
      throw std::bad_alloc();
    void *p = base_ + used_;
    used_ += bytes;
    return p;
  }

private:
  char *base_;
  std::size_t size_, used_ = 0;
};

BumpArena *current_arena = nullptr;

template <class T> struct BumpAllocator {
  using value_type = T;
  BumpAllocator() = default;
  template <class U> BumpAllocator(const BumpAllocator<U> &) {}
  T *allocate(std::size_t n) {
    return static_cast<T *>(current_arena->allocate(n * sizeof(T), alignof(T)));
  }
  void deallocate(T *, std::size_t) {}
  template <class U> bool operator==(const BumpAllocator<U> &) const { return true; }
};

/// Hardware cache-miss counters (L1d read misses, last-level misses) of
/// this thread, through perf_event_open, where the kernel and the machine
/// offer them; virtual machines often do not, and then nothing is counted
/// and the counters are not reported.
class HwCounters {
public:
  HwCounters() {
    fd_[0] = open(PERF_TYPE_HW_CACHE, PERF_COUNT_HW_CACHE_L1D | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
                                          (PERF_COUNT_HW_CACHE_RESULT_MISS << 16));
    fd_[1] = open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES);
  }
  ~HwCounters() {
    for (int fd : fd_)
      if (fd >= 0)
        ::close(fd);
  }
  bool available() const { return fd_[0] >= 0 && fd_[1] >= 0; }
  /// The two counts so far (zero when not available).
  std::pair<double, double> read() const {
    if (!available())
      return {0, 0};
    std::uint64_t v[2] = {0, 0};
    for (int i = 0; i < 2; ++i)
      if (::read(fd_[i], &v[i], sizeof v[i]) != sizeof v[i])
        v[i] = 0;
    return {static_cast<double>(v[0]), static_cast<double>(v[1])};
  }

private:
  static int open(std::uint32_t type, std::uint64_t config) {
    perf_event_attr attr{};
    attr.size = sizeof attr;
    attr.type = type;
    attr.config = config;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    return static_cast<int>(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
  }
  int fd_[2];
};

const HwCounters &hwCounters() {
  static const HwCounters c;
  return c;
}

/// Phase times of one kernel run, seconds, and the phases' hardware
/// cache misses when counted.
struct Phases {
  std::vector<std::pair<const char *, double>> t;
  std::vector<std::pair<double, double>> misses; // L1d, last level
  std::pair<double, double> at = hwCounters().read();
  long long checksum = 0;
  /// Ends a phase: its time, and the misses since the previous phase ended
  /// (or since construction); mark() restarts the count after untimed work.
  void add(const char *name, double s) {
    const auto now = hwCounters().read();
    t.emplace_back(name, s);
    misses.emplace_back(now.first - at.first, now.second - at.second);
    at = now;
  }
  void mark() { at = hwCounters().read(); }
  double total() const {
    double sum = 0;
    for (const auto &p : t)
      sum += p.second;
    return sum;
  }
};

void report(benchmark::State &state, const std::vector<Phases> &runs, std::size_t n) {
  if (runs.empty())
    return;
  for (std::size_t i = 0; i < runs[0].t.size(); ++i) {
    double sum = 0;
    for (const Phases &r : runs)
      sum += r.t[i].second;
    state.counters[std::string(runs[0].t[i].first) + "_ns"] =
        benchmark::Counter(sum / static_cast<double>(runs.size()) * 1e9 / static_cast<double>(n));
    if (hwCounters().available()) {
      double l1 = 0, ll = 0;
      for (const Phases &r : runs) {
        l1 += r.misses[i].first;
        ll += r.misses[i].second;
      }
      const double per = static_cast<double>(runs.size()) * static_cast<double>(n);
      state.counters[std::string(runs[0].t[i].first) + "_l1d_misses"] = benchmark::Counter(l1 / per);
      state.counters[std::string(runs[0].t[i].first) + "_ll_misses"] = benchmark::Counter(ll / per);
    }
  }
  state.counters["hw_counters"] = hwCounters().available() ? 1 : 0;
  state.counters["checksum"] = static_cast<double>(runs[0].checksum);
  for (const Phases &r : runs)
    if (r.checksum != runs[0].checksum)
      state.SkipWithError("checksum differs between iterations");
  state.counters["nodes"] = static_cast<double>(n);
}

// The traversal phases, and the set's build, as functions of their own,
// never inlined, so that callgrind can count the cache misses (and the
// build's instructions) of just these (--toggle-collect='phase*':
// bench_report.py's locality tables).
template <class List> __attribute__((noinline)) void phaseListForEach(List &list) {
  std::for_each(list.begin(), list.end(), [](int &x) { ++x; });
}
template <class Set>
__attribute__((noinline)) void phaseTreeBuild(Set &set, const std::vector<int> &keys) {
  for (int k : keys)
    set.insert(k);
}
template <class Set>
__attribute__((noinline)) long long phaseTreeFind(const Set &set, const std::vector<int> &probe) {
  long long hits = 0;
  for (int k : probe)
    hits += set.find(k) != set.end();
  return hits;
}
template <class Set> __attribute__((noinline)) long long phaseTreeForEach(const Set &set) {
  long long sum = 0;
  std::for_each(set.begin(), set.end(), [&sum](int k) { sum += k; });
  return sum;
}

/// Warms the heap as the paper does: 2N objects of a list node's size, a
/// random N of them freed. Returns the N still held (freed by the caller).
std::vector<void *> warmList(std::size_t n, std::mt19937 &rng) {
  std::vector<void *> warm(2 * n);
  for (auto &p : warm)
    p = ::operator new(24);
  std::shuffle(warm.begin(), warm.end(), rng);
  for (std::size_t i = 0; i < n; ++i)
    ::operator delete(warm[i]);
  warm.erase(warm.begin(), warm.begin() + static_cast<long>(n));
  return warm;
}

template <class Alloc, bool Ideal> void BM_ListKernel(benchmark::State &state) {
  const std::size_t n = list_n;
  std::vector<Phases> runs;
  for (auto _ : state) {
    std::mt19937 rng(seed);
    std::vector<void *> warm = warmList(n, rng);
    std::vector<int> values(n);
    for (auto &v : values)
      v = static_cast<int>(rng() % 1000000);
    Phases ph;
    std::list<int, Alloc> l;
    ph.mark();
    auto t0 = Clock::now();
    for (std::size_t i = 0; i < n; ++i)
      (i % 2 == 0) ? l.push_back(values[i]) : l.push_front(values[i]);
    ph.add("build", secondsSince(t0));

    auto phases = [&](auto &list) {
      ph.mark();
      auto t = Clock::now();
      phaseListForEach(list);
      ph.add("for_each", secondsSince(t));
      long long sum = 0;
      for (int x : list)
        sum += x;
      ph.mark();
      t = Clock::now();
      list.sort();
      ph.add("sort", secondsSince(t));
      ph.mark();
      t = Clock::now();
      std::for_each(list.begin(), list.end(), [](int &x) { ++x; });
      ph.add("for_each_sorted", secondsSince(t));
      ph.checksum = sum * 31 + list.front() * 7 + list.back();
      ph.mark();
      t = Clock::now();
      list.clear();
      ph.add("clear", secondsSince(t));
    };
    if constexpr (Ideal) {
      BumpArena arena(n * 64 + (1 << 20));
      current_arena = &arena;
      std::list<int, BumpAllocator<int>> ideal(l.begin(), l.end()); // traversal order
      phases(ideal);
      current_arena = nullptr;
    } else {
      phases(l);
    }
    for (void *p : warm)
      ::operator delete(p);
    runs.push_back(ph);
    state.SetIterationTime(ph.total());
  }
  report(state, runs, n);
}

template <class Alloc, bool Ideal> void BM_TreeKernel(benchmark::State &state) {
  const std::size_t n = tree_n;
  std::vector<Phases> runs;
  for (auto _ : state) {
    // Warm: a set of 3N keys, a random N of them erased (the set stays).
    std::set<int> warm;
    const TreeKernelInput in = treeKernelInput(n, seed, warm);
    const std::vector<int> &insert = in.insert, &probe = in.probe;

    Phases ph;
    auto s = std::make_unique<std::set<int, std::less<int>, Alloc>>();
    ph.mark();
    auto t0 = Clock::now();
    phaseTreeBuild(*s, insert);
    ph.add("build", secondsSince(t0));

    auto phases = [&](auto &set) {
      ph.mark();
      auto t = Clock::now();
      const long long hits = phaseTreeFind(set, probe);
      ph.add("find", secondsSince(t));
      ph.mark();
      t = Clock::now();
      const long long sum = phaseTreeForEach(set);
      ph.add("for_each", secondsSince(t));
      ph.checksum = hits * 1000003 + sum;
      ph.mark();
      t = Clock::now();
      set.clear();
      ph.add("destroy", secondsSince(t));
    };
    if constexpr (Ideal) {
      BumpArena arena(n * 64 + (1 << 20));
      current_arena = &arena;
      // In key order: in-order traversal walks memory forwards.
      std::set<int, std::less<int>, BumpAllocator<int>> ideal(s->begin(), s->end());
      s->clear();
      phases(ideal);
      current_arena = nullptr;
    } else {
      phases(*s);
    }
    runs.push_back(ph);
    state.SetIterationTime(ph.total());
  }
  report(state, runs, n);
}

template <class Alloc, bool Ideal> void registerVariant(const std::string &name) {
  benchmark::RegisterBenchmark(("List/" + name).c_str(), BM_ListKernel<Alloc, Ideal>)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(("Tree/" + name).c_str(), BM_TreeKernel<Alloc, Ideal>)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

#ifdef DEFERO_BENCH_ALLOCATOR
template <class Pred, unsigned... Ks> void registerDefero(const char *pred) {
  (registerVariant<defero::allocator<int, defero::KBit<Ks>, Pred>, false>(
       std::string("defero/") + pred + "/k" + std::to_string(Ks)),
   ...);
}
#endif

/// Takes --name=N off argv (benchmark::Initialize rejects flags it does
/// not know); a bad value is a one-line error.
bool takeFlag(int &argc, char **argv, const char *name, unsigned long long lo,
              unsigned long long &out) {
  const std::size_t len = std::strlen(name);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], name, len) != 0 || argv[i][len] != '=')
      continue;
    const char *v = argv[i] + len + 1;
    char *end = nullptr;
    const unsigned long long x = std::strtoull(v, &end, 10);
    if (!*v || *end || *v == '-' || x < lo || x > (1ull << 32)) {
      std::fprintf(stderr, "kernels_benchmark: %s='%s' is not valid; accepted: an integer from %llu to %llu\n",
                   name, v, lo, 1ull << 32);
      std::exit(2);
    }
    out = x;
    for (int j = i; j + 1 < argc; ++j)
      argv[j] = argv[j + 1];
    --argc;
    return true;
  }
  return false;
}

} // namespace

int main(int argc, char **argv) {
  unsigned long long v;
  if (takeFlag(argc, argv, "--list-n", 1, v))
    list_n = v;
  if (takeFlag(argc, argv, "--tree-n", 1, v))
    tree_n = v;
  if (takeFlag(argc, argv, "--seed", 0, v))
    seed = static_cast<unsigned>(v);
  registerVariant<std::allocator<int>, false>("std");
  registerVariant<std::allocator<int>, true>("ideal");
#ifdef DEFERO_BENCH_ALLOCATOR
  registerDefero<defero::First, 12, 16, 20, 24, 28>("first");
  registerDefero<defero::Best, 12, 16, 20, 24, 28>("best");
  registerDefero<defero::Path, 20>("path");
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
