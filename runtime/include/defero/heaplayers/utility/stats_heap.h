// stats_heap.h - StatsHeap: counts allocations, frees, live and peak live
// bytes over Super.
//
// Counts are relaxed atomics, so the layer is as thread-safe as Super; a
// snapshot taken while other threads allocate is approximate. Bytes are
// usable bytes (Super::getSize), i.e. what the heap really holds for the
// program.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "defero/heaplayers/heap_layer.h"

namespace defero {

struct HeapCounters {
  std::atomic<std::uint64_t> allocs{0}, frees{0};
  std::atomic<std::uint64_t> live_bytes{0}, peak_live_bytes{0};

  void onAlloc(std::size_t bytes) {
    allocs.fetch_add(1, std::memory_order_relaxed);
    const std::uint64_t live =
        live_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    std::uint64_t peak = peak_live_bytes.load(std::memory_order_relaxed);
    while (live > peak && !peak_live_bytes.compare_exchange_weak(
                              peak, live, std::memory_order_relaxed))
      ;
  }
  void onFree(std::size_t bytes) {
    frees.fetch_add(1, std::memory_order_relaxed);
    live_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  }
};

template <class Super> class StatsHeap : public Super {
  static_assert(SizedHeapLayer<Super>, "StatsHeap measures via getSize");

public:
  void *malloc(std::size_t sz) {
    void *p = Super::malloc(sz);
    if (p)
      counters_.onAlloc(Super::getSize(p));
    return p;
  }
  void free(void *p) {
    if (!p)
      return;
    counters_.onFree(Super::getSize(p));
    Super::free(p);
  }
  const HeapCounters &counters() const { return counters_; }

private:
  HeapCounters counters_;
};

static_assert(SizedHeapLayer<StatsHeap<detail::ProbeHeap>>);

} // namespace defero
