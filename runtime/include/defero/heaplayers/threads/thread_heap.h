// thread_heap.h - ThreadHeap: N independent heaps, one per thread slot, with
// correct cross-thread free.
//
// A thread takes a slot round-robin the first time it allocates and keeps
// it. Frees go to the heap that owns the pointer (Super::owns), whichever
// thread frees it, so no heap ever sees a pointer it did not hand out. Super
// must be thread-safe on its own (e.g. a LockedHeap): two threads may share
// a slot, and a cross-thread free enters the owner's heap from another
// thread.
//
// Cost: malloc is one TLS read plus Super::malloc; free asks up to N heaps
// whether they own the pointer (a metadata load each).
#pragma once

#include <atomic>
#include <cstddef>

#include "defero/heaplayers/heap_layer.h"

namespace defero {

template <unsigned N, class Super> class ThreadHeap {
  static_assert(N >= 1 && N <= 64, "ThreadHeap: 1..64 heaps");
  static_assert(OwningHeapLayer<Super>, "ThreadHeap routes frees by owns()");

public:
  static constexpr unsigned kHeaps = N;

  void *malloc(std::size_t sz) { return current().malloc(sz); }

  void free(void *p) {
    if (Super *owner = ownerOf(p)) {
      owner->free(p);
      return;
    }
    // Nobody owns it: let a heap report the foreign pointer its own way.
    heaps_[0].free(p);
  }

  std::size_t getSize(const void *p)
    requires SizedHeapLayer<Super>
  {
    Super *owner = ownerOf(p);
    return owner ? owner->getSize(p) : 0;
  }

  bool owns(const void *p) const {
    for (const Super &h : heaps_)
      if (h.owns(p))
        return true;
    return false;
  }

  /// The heap that owns `p`, or nullptr.
  Super *ownerOf(const void *p) {
    for (Super &h : heaps_)
      if (h.owns(p))
        return &h;
    return nullptr;
  }

  /// The calling thread's heap.
  Super &current() { return heaps_[slot()]; }

  /// The heap that owns `anchor` if any (so a hinted node lands in the same
  /// heap as its neighbour), else the calling thread's heap.
  Super &heapFor(const void *anchor) {
    Super *owner = anchor ? ownerOf(anchor) : nullptr;
    return owner ? *owner : current();
  }

  Super &heap(unsigned i) { return heaps_[i]; }

private:
  unsigned slot() {
    static thread_local unsigned mine
        __attribute__((tls_model("initial-exec"))) = 0;
    if (mine == 0)
      mine = 1 + next_.fetch_add(1, std::memory_order_relaxed) % N;
    return mine - 1;
  }

  Super heaps_[N]{};
  std::atomic<unsigned> next_{0};
};

static_assert(SizedHeapLayer<ThreadHeap<2, detail::ProbeHeap>> &&
              OwningHeapLayer<ThreadHeap<2, detail::ProbeHeap>>);

} // namespace defero
