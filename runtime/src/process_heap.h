// process_heap.h - the heap behind libdefero's malloc, operator new and C
// API: the layers composed, plus the hint channel, policies and statistics.
//
//   small objects (<= 32 KiB):
//     ThreadHeap<4, LockedHeap<SpinLock, KBitHeap<SharedArena<SpanArena>>>>
//   large objects: MmapHeap
//   around both: statistics (per-thread-slot counters, live bytes published
//   in batches) and TraceHeap's TraceLog, driven here rather than through
//   the StatsHeap/TraceHeap layers because hinted calls carry more than
//   malloc(size) and the counters must not share cache lines between
//   threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "config.h"
#include "container_registry.h"
#include "defero/heaplayers/threads/locked_heap.h"
#include "defero/heaplayers/threads/spin_lock.h"
#include "defero/heaplayers/threads/thread_heap.h"
#include "defero/heaplayers/top/mmap_heap.h"
#include "defero/heaplayers/top/shared_arena.h"
#include "defero/heaplayers/top/span_arena.h"
#include "defero/heaplayers/utility/trace_heap.h"
#include "defero/kbit/kbit_heap.h"
#if DEFERO_REALTIME
#include "realtime_heap.h"
#endif

namespace defero {

/// The one-shot hint of the calling thread (kind 0: none pending).
struct PendingHint {
  std::uint8_t kind; // 0 none, 1 neighbor, 2 tree, 3 container
  std::int8_t side;  // tree: 1 = insert left
  const void *container;
  const void *where;
};
enum : std::uint8_t { kHintNone, kHintNeighbor, kHintTree, kHintContainer };

extern thread_local PendingHint tls_hint __attribute__((tls_model("initial-exec")));

class ProcessHeap {
  struct ArenaTag {};

public:
  // 64 GiB of address space for small objects (reserved, not committed).
  using Arena = SharedArena<SpanArena<std::size_t{1} << 36, 65536>, ArenaTag>;
  using Kbit = LockedHeap<SpinLock, KBitHeap<Arena, 20>>;
  using Small = ThreadHeap<4, Kbit>;

  explicit ProcessHeap(const Config &cfg);

  void *malloc(std::size_t sz);
  void *mallocAligned(std::size_t sz, std::size_t align);
  void *calloc(std::size_t n, std::size_t sz);
  void *realloc(void *p, std::size_t sz, const char *call);
  void free(void *p, const char *call);
  std::size_t usableSize(const void *p);

  void *allocNear(std::size_t sz, const void *hint);
  void *allocPath(std::size_t sz, std::uint64_t bits, unsigned depth);
  long long classOf(const void *p);

  // hint ABI
  void hintNeighbor(const void *c, const void *n);
  void hintTree(const void *c, const void *parent, int insert_left);
  void hintContainer(const void *c);
  void containerPolicy(const void *c, const char *predicate, int k);

  /// Formats the stats JSON (with a trailing newline) into buf; returns its
  /// length.
  std::size_t formatStats(char *buf, std::size_t cap);
  void atExit();

  void forkPrepare();
  void forkParent();
  void forkChild();

  const Config &config() const { return cfg_; }

  /// Real-time builds: starts the buddy heap DEFERO_BACKEND names (nothing
  /// for kbit). Runs once, while the process heap is being constructed:
  /// the K-Bit heap already serves the model's own allocations.
  void startRealtime();

private:
  void unlockAfterFork(bool child);
  void *mallocFresh(std::size_t sz, bool *fresh);
  void *mallocLarge(std::size_t sz, std::size_t align, bool *fresh);
  void *finishSmall(void *p, std::size_t sz);
  void *hinted(std::size_t sz, const PendingHint &h);
#if DEFERO_REALTIME
  void *realtimeMalloc(std::size_t sz);
  std::size_t formatRealtimeStats(char *buf, std::size_t cap);
  RealtimeHeap *rt_ = nullptr;
  /// Whether this call should go to the real-time heap.
  bool realtime() const { return rt_ && !tls_in_realtime; }
#endif
  bool pathBits(const void *parent, int insert_left, std::uint64_t &bits,
                unsigned &depth);
  void noteAlloc(void *p, std::size_t usable, std::size_t requested);
  void noteFootprint();
  Kbit *smallOwner(const void *p);
  Kbit &heapFor(const void *anchor);

  /// Counters of one thread slot, on their own cache line so threads do
  /// not bounce lines between cores (threads share a slot only beyond
  /// kCounterSlots threads, and then still count exactly: the adds are
  /// atomic).
  struct alignas(64) SlotCounters {
    std::atomic<std::uint64_t> hints[3];
    std::atomic<std::uint64_t> hinted_allocs, hint_same_class, policy_allocs;
    std::atomic<std::uint64_t> large_allocs, large_frees;
  };
  static constexpr unsigned kCounterSlots = 64;
  SlotCounters &counters();
  void addLive(std::int64_t bytes);
  void armLiveHook();
  static void threadExit(void *heap);

  Config cfg_;
  int pid_; // the process that read the configuration
  os::ThreadExitHook live_hook_;
  Small small_;
  MmapHeap large_;
  ContainerRegistry registry_;
  TraceLog trace_;
  SlotCounters slots_[kCounterSlots] = {};
  std::atomic<Kbit *> by_id_[256] = {};
  std::atomic<unsigned> next_slot_{0};
  // Live bytes reach this total in batches of at most kLiveBatch per thread
  // (see addLive), so peak_live_bytes is exact to within kLiveBatch bytes
  // per thread.
  std::atomic<std::int64_t> live_{0}, peak_live_{0};
  std::atomic<std::uint64_t> peak_footprint_{0};
};

/// The process heap, constructed (and the environment read) on first use.
ProcessHeap &processHeap();

} // namespace defero
