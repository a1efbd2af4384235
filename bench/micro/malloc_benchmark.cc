// malloc_benchmark.cc - allocator micro-benchmarks: the system allocator
// (glibc malloc/free) against the Defero heap (defero_malloc/defero_free),
// in one process.
//
// Defero::core provides the Defero heap without replacing malloc, so
// `std::malloc` here is glibc and `defero_*` is Defero. Every kernel is a
// template over an allocator policy and is registered once per allocator,
// system first, so each pair sits side by side in the output.
//
//   BM_MallocFree/<alloc>/<mix>/batch:B/real_time/threads:T
//     Throughput of malloc+free pairs (one item = one pair). batch:1 frees
//     each block right away; batch:1000 allocates 1000 blocks, then frees
//     them in a random order. Real time, so items/s at threads:2 is the
//     aggregate of both threads.
//   BM_HintedChain/<alloc>/<call>/size:S/nodes:N
//     Builds a chain of N blocks, each placed by a hint to the previous one
//     (where the call takes one), then frees the chain; one item = one
//     allocation and its free. The heap is first warmed as the Defero
//     paper's kernels do: allocate 2N blocks, free a random N, so new blocks
//     land among holes. Counter same_page: fraction of consecutive chain
//     blocks that share a 4 KiB page (K=20's class), from one extra untimed
//     chain.
//
// Usage: malloc_benchmark [--benchmark_filter=REGEX] [--benchmark_min_time=S]
// (default min time 0.2 s per benchmark, set below; a later flag wins).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "defero/defero.h"

namespace {

// --- allocators ------------------------------------------------------------

struct SystemAllocator {
  static constexpr const char *kName = "system";
  static void *Allocate(std::size_t size) { return std::malloc(size); }
  static void Deallocate(void *p) { std::free(p); }
};

struct DeferoAllocator {
  static constexpr const char *kName = "defero";
  static void *Allocate(std::size_t size) { return defero_malloc(size); }
  static void Deallocate(void *p) { defero_free(p); }
};

// A caller uses what it allocates; one store per block keeps both
// allocators honest about handing out writable memory.
inline void Touch(void *p) { *static_cast<volatile char *>(p) = 1; }

// --- size mixes ------------------------------------------------------------

enum class SizeMix {
  kFixed16,
  kFixed64,
  kUniform16To256,
  kUniform16To4K,
  kMixedWith64K
};

constexpr std::array<SizeMix, 5> kSizeMixes = {
    SizeMix::kFixed16, SizeMix::kFixed64, SizeMix::kUniform16To256,
    SizeMix::kUniform16To4K, SizeMix::kMixedWith64K};

const char *MixName(SizeMix mix) {
  switch (mix) {
  case SizeMix::kFixed16:
    return "fixed_16";
  case SizeMix::kFixed64:
    return "fixed_64";
  case SizeMix::kUniform16To256:
    return "uniform_16_256";
  case SizeMix::kUniform16To4K:
    return "uniform_16_4096";
  case SizeMix::kMixedWith64K:
    return "uniform_16_256_plus_64k";
  }
  return "?";
}

// A power of two, so the size cursor wraps with a mask; large enough that
// the sequence does not repeat within one batch.
constexpr std::size_t kSizeTableLength = 4096;

// Request sizes drawn once per thread (fixed seed per thread index), so both
// allocators see exactly the same sequence. kMixedWith64K: uniform
// 16-256 B, and one request in 64 is 64 KiB (above Defero's 32 KiB small
// limit, below glibc's 128 KiB mmap threshold).
std::vector<std::size_t> MakeSizes(SizeMix mix, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> sizes(kSizeTableLength);
  auto uniform = [&](std::size_t lo, std::size_t hi) {
    return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
  };
  for (std::size_t &s : sizes) {
    switch (mix) {
    case SizeMix::kFixed16:
      s = 16;
      break;
    case SizeMix::kFixed64:
      s = 64;
      break;
    case SizeMix::kUniform16To256:
      s = uniform(16, 256);
      break;
    case SizeMix::kUniform16To4K:
      s = uniform(16, 4096);
      break;
    case SizeMix::kMixedWith64K:
      s = uniform(0, 63) == 0 ? std::size_t{64} << 10 : uniform(16, 256);
      break;
    }
  }
  return sizes;
}

std::vector<std::size_t> RandomPermutation(std::size_t n, unsigned seed) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  return order;
}

// --- 1. malloc/free throughput ---------------------------------------------

template <class Allocator>
void BM_MallocFree(benchmark::State &state, SizeMix mix) {
  const auto batch = static_cast<std::size_t>(state.range(0));
  const auto seed = 1000u + static_cast<unsigned>(state.thread_index());
  const std::vector<std::size_t> sizes = MakeSizes(mix, seed);
  const std::vector<std::size_t> free_order = RandomPermutation(batch, seed);
  std::vector<void *> blocks(batch);
  std::size_t cursor = 0;

  if (batch == 1) {
    for (auto _ : state) {
      void *p = Allocator::Allocate(sizes[cursor++ & (kSizeTableLength - 1)]);
      benchmark::DoNotOptimize(p);
      Touch(p);
      Allocator::Deallocate(p);
    }
  } else {
    for (auto _ : state) {
      for (void *&p : blocks) {
        p = Allocator::Allocate(sizes[cursor++ & (kSizeTableLength - 1)]);
        benchmark::DoNotOptimize(p);
        Touch(p);
      }
      for (std::size_t i : free_order)
        Allocator::Deallocate(blocks[i]);
    }
  }
  state.SetItemsProcessed(state.iterations() *
                          static_cast<std::int64_t>(batch));
}

// --- 2. hinted allocation along a chain --------------------------------------

// How a chain block is allocated. kSystemMalloc and kDeferoMalloc ignore
// the hint: they are the baselines for the hinted calls.
enum class ChainCall {
  kSystemMalloc,
  kDeferoMalloc,
  kAllocNear,
  kHintNeighbor,
  kAllocPath
};

// Path depth for defero_alloc_path: deeper than any class tree built here,
// so the walk ends where the random bits run into a missing child.
constexpr unsigned kPathDepth = 24;

template <ChainCall Call>
void *ChainAllocate(std::size_t size, const void *container,
                    const void *previous, std::uint64_t path_bits) {
  if constexpr (Call == ChainCall::kSystemMalloc) {
    return std::malloc(size);
  } else if constexpr (Call == ChainCall::kDeferoMalloc) {
    return defero_malloc(size);
  } else if constexpr (Call == ChainCall::kAllocNear) {
    return defero_alloc_near(size, previous);
  } else if constexpr (Call == ChainCall::kHintNeighbor) {
    __defero_hint_neighbor(container, previous); // one-shot: next malloc
    return defero_malloc(size);
  } else {
    return defero_alloc_path(size, path_bits, kPathDepth);
  }
}

template <ChainCall Call> void ChainFree(void *p) {
  if constexpr (Call == ChainCall::kSystemMalloc)
    std::free(p);
  else
    defero_free(p);
}

template <ChainCall Call> void BM_HintedChain(benchmark::State &state) {
  const auto size = static_cast<std::size_t>(state.range(0));
  const auto nodes = static_cast<std::size_t>(state.range(1));
  std::mt19937_64 rng(42);

  // Warm-up: allocate 2N, free a random N; the survivors stay live until
  // the end, so every chain is built among the same holes.
  std::vector<void *> warm(2 * nodes);
  constexpr ChainCall kWarmCall = Call == ChainCall::kSystemMalloc
                                      ? ChainCall::kSystemMalloc
                                      : ChainCall::kDeferoMalloc;
  for (void *&p : warm)
    p = ChainAllocate<kWarmCall>(size, nullptr, nullptr, 0);
  std::shuffle(warm.begin(), warm.end(), rng);
  for (std::size_t i = 0; i < nodes; ++i)
    ChainFree<Call>(warm[i]);
  const void *const anchor = warm[nodes]; // a random survivor starts chains

  std::vector<std::uint64_t> path_bits(nodes);
  for (std::uint64_t &b : path_bits)
    b = rng();
  std::vector<void *> chain(nodes);
  const int container = 0; // the identity a list would pass to the hint ABI

  auto build = [&] {
    const void *previous = anchor;
    for (std::size_t i = 0; i < nodes; ++i) {
      void *p = ChainAllocate<Call>(size, &container, previous, path_bits[i]);
      benchmark::DoNotOptimize(p);
      Touch(p);
      chain[i] = p;
      previous = p;
    }
  };

  for (auto _ : state) {
    build();
    for (void *p : chain)
      ChainFree<Call>(p);
  }
  state.SetItemsProcessed(state.iterations() *
                          static_cast<std::int64_t>(nodes));

  build(); // untimed: placement quality of one chain
  std::size_t same_page = 0;
  for (std::size_t i = 1; i < nodes; ++i)
    same_page += (reinterpret_cast<std::uintptr_t>(chain[i - 1]) >> 12) ==
                 (reinterpret_cast<std::uintptr_t>(chain[i]) >> 12);
  state.counters["same_page"] = nodes > 1 ? static_cast<double>(same_page) /
                                                static_cast<double>(nodes - 1)
                                          : 0.0;
  for (void *p : chain)
    ChainFree<Call>(p);
  for (std::size_t i = nodes; i < warm.size(); ++i)
    ChainFree<Call>(warm[i]);
}

// --- registration ------------------------------------------------------------

template <class Allocator>
void RegisterMallocFree(SizeMix mix, std::int64_t batch, int threads) {
  const std::string name = std::string("BM_MallocFree/") + Allocator::kName +
                           "/" + MixName(mix);
  benchmark::RegisterBenchmark(name.c_str(), BM_MallocFree<Allocator>, mix)
      ->Arg(batch)
      ->ArgName("batch")
      ->UseRealTime()
      ->Threads(threads);
}

template <ChainCall Call> void RegisterHintedChain(const char *name) {
  benchmark::RegisterBenchmark(name, BM_HintedChain<Call>)
      ->ArgsProduct({{32, 256}, {1000, 10000}})
      ->ArgNames({"size", "nodes"});
}

void RegisterAll() {
  for (SizeMix mix : kSizeMixes)
    for (std::int64_t batch : {1, 1000})
      for (int threads : {1, 2}) {
        RegisterMallocFree<SystemAllocator>(mix, batch, threads);
        RegisterMallocFree<DeferoAllocator>(mix, batch, threads);
      }
  RegisterHintedChain<ChainCall::kSystemMalloc>("BM_HintedChain/system/malloc");
  RegisterHintedChain<ChainCall::kDeferoMalloc>("BM_HintedChain/defero/malloc");
  RegisterHintedChain<ChainCall::kAllocNear>(
      "BM_HintedChain/defero/alloc_near");
  RegisterHintedChain<ChainCall::kHintNeighbor>(
      "BM_HintedChain/defero/hint_neighbor");
  RegisterHintedChain<ChainCall::kAllocPath>(
      "BM_HintedChain/defero/alloc_path");
}

} // namespace

int main(int argc, char **argv) {
  // The default per-benchmark time, as a leading flag so that a later
  // --benchmark_min_time (the CTest smoke run) overrides it; MinTime() on
  // the registrations would override the command line instead.
  std::vector<char *> args;
  static char default_min_time[] = "--benchmark_min_time=0.2";
  args.push_back(argv[0]);
  args.push_back(default_min_time);
  for (int i = 1; i < argc; ++i)
    args.push_back(argv[i]);
  int args_count = static_cast<int>(args.size());
  args.push_back(nullptr);

  benchmark::Initialize(&args_count, args.data());
  if (benchmark::ReportUnrecognizedArguments(args_count, args.data()))
    return 1;
  RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
