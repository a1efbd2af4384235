// realtime_route.cpp - the process heap's side of a real-time build
// (-DDEFERO_BACKEND=hw-obs|hw-rbs|sw-buddy): starting the buddy heap,
// program allocations routed to it, its statistics. CMake compiles this
// file only into real-time builds; everywhere else the process heap's
// calls into it sit in `if constexpr (kRealtimeBuild)` and compile away,
// so the backend is chosen once, at configure time.
#include <cstdio>
#include <mutex>

#include "process_heap.h"

namespace defero {

void ProcessHeap::startRealtime() {
  rt_ = RealtimeHeap::start(cfg_);
  std::lock_guard<SpinLock> guard(heaps_lock_);
  for (LocalHeap *h = heaps_; h; h = h->next_heap)
    h->divert = divertFlag();
  if (rt_) { // (the only thread with a heap yet: the constructor)
    tls.fast = noFastHeap();
    tls.recent = &kClosedRecent;
  }
}

/// A program allocation in a real-time build: the pending hint is consumed
/// and counted (the buddy policy cannot place by it), the block comes from
/// the buddy heap.
void *ProcessHeap::realtimeMalloc(LocalHeap *h, std::size_t sz, const PendingHint &hint) {
  void *p = rt_->malloc(sz);
  if (!p)
    return nullptr;
  if (hint.kind) {
    h->count.hinted_allocs.add(1);
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(rt_->base());
    const unsigned shift = 32 - cfg_.k;
    if (hint.where && rt_->owns(hint.where) && cfg_.k > 0 &&
        ((reinterpret_cast<std::uintptr_t>(hint.where) - base) >> shift) ==
            ((reinterpret_cast<std::uintptr_t>(p) - base) >> shift))
      h->count.hint_same_class.add(1);
  }
  traceMalloc(p, sz);
  return p;
}

/// The stats JSON of a real-time build: every key of the K-Bit build's
/// (stats.cpp's writer), with the buddy heap's values, then the keys of
/// its own: the bootstrap heap's allocations (the Verilated model's) and
/// RealtimeHeap::formatHw's. The buddy heap serves every size from its one
/// mapping and gives nothing back: no large mappings, nothing released, and
/// it holds its extent up to the end of its highest block (its peak
/// footprint).
std::size_t ProcessHeap::formatRealtimeStats(char *buf, std::size_t cap) {
  const HeapSums s = sumHeaps();
  const RealtimeHeap::Counts n = rt_->counts();
  char extra[760];
  const int boot = std::snprintf(extra, sizeof extra, "\"bootstrap_allocs\": %llu, ",
                                 s.small_allocs);
  if (boot < 0 || static_cast<std::size_t>(boot) >= sizeof extra ||
      !rt_->formatHw(extra + boot, sizeof extra - static_cast<std::size_t>(boot)))
    return 0;
  StatsKeys keys = statsKeys(s);
  keys.allocs = n.allocs;
  keys.frees = n.frees;
  keys.peak_live_bytes = static_cast<long long>(n.peak_live);
  keys.peak_footprint_bytes = n.peak_used;
  keys.live_bytes = static_cast<long long>(n.live);
  keys.large_mapped_bytes = 0;
  keys.released_bytes = 0;
  keys.resident_bytes = static_cast<long long>(n.peak_used);
  return writeStats(keys, extra, buf, cap);
}

} // namespace defero
