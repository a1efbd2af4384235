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

/// The stats JSON of a real-time build: the buddy heap's counts, the
/// hints it received, and its hardware keys.
std::size_t ProcessHeap::formatRealtimeStats(char *buf, std::size_t cap) {
  unsigned long long hints[3] = {}, hinted = 0, same = 0, boot = 0;
  {
    std::lock_guard<SpinLock> guard(heaps_lock_);
    for (const LocalHeap *h = heaps_; h; h = h->next_heap) {
      for (int k = 0; k < 3; ++k)
        hints[k] += h->hintsOf(static_cast<unsigned>(k));
      hinted += h->hintedAllocs();
      same += h->hintSameClass();
      boot += h->smallAllocs() - h->cachedSlots() + h->stackPops();
    }
  }
  const RealtimeHeap::Counts n = rt_->counts();
  char hw[700];
  if (!rt_->formatHw(hw, sizeof hw))
    return 0;
  int len = std::snprintf(
      buf, cap,
      "{\"allocs\": %llu, \"frees\": %llu, \"peak_live_bytes\": %llu, "
      "\"peak_footprint_bytes\": %llu, "
      "\"hints\": {\"neighbor\": %llu, \"tree\": %llu, \"container\": %llu}, "
      "\"hinted_allocs\": %llu, \"hint_same_class\": %llu, "
      "\"policy\": \"%s\", \"k\": %u, \"backend\": \"%s\", "
      "\"live_bytes\": %llu, \"bootstrap_allocs\": %llu, %s}\n",
      n.allocs, n.frees, n.peak_live, n.peak_used, hints[0], hints[1], hints[2],
      hinted, same, predicateName(cfg_.policy), cfg_.k, cfg_.backend, n.live, boot, hw);
  if (len < 0)
    return 0;
  return static_cast<std::size_t>(len) < cap ? static_cast<std::size_t>(len) : cap - 1;
}

} // namespace defero
