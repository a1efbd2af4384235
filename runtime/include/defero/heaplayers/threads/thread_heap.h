// thread_heap.h - ThreadHeap: N independent heaps, one per thread slot, with
// correct cross-thread free.
//
// A thread takes the least-used slot the first time it allocates and keeps
// it until it exits (when the slot's use count drops again), so live
// threads spread over the heaps even when threads come and go. Frees go to the heap that owns the pointer (Super::owns), whichever
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
#include <mutex>

#include "defero/heaplayers/heap_layer.h"
#include "defero/heaplayers/threads/spin_lock.h"
#include "defero/platform/os.h"

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
    slots_[0].heap.free(p);
  }

  std::size_t getSize(const void *p)
    requires SizedHeapLayer<Super>
  {
    Super *owner = ownerOf(p);
    return owner ? owner->getSize(p) : 0;
  }

  bool owns(const void *p) const {
    for (const Slot &s : slots_)
      if (s.heap.owns(p))
        return true;
    return false;
  }

  /// The heap that owns `p`, or nullptr.
  Super *ownerOf(const void *p) {
    for (Slot &s : slots_)
      if (s.heap.owns(p))
        return &s.heap;
    return nullptr;
  }

  /// The calling thread's heap.
  Super &current() { return slots_[slot()].heap; }

  /// The heap that owns `anchor` if any (so a hinted node lands in the same
  /// heap as its neighbour), else the calling thread's heap.
  Super &heapFor(const void *anchor) {
    Super *owner = anchor ? ownerOf(anchor) : nullptr;
    return owner ? *owner : current();
  }

  Super &heap(unsigned i) { return slots_[i].heap; }

  /// Held across fork() with the heaps' locks (a thread may be taking its
  /// first slot).
  void lockSlots() { hook_lock_.lock(); }
  void unlockSlots() { hook_lock_.unlock(); }

private:
  struct ThreadRecord {
    ThreadHeap *owner;
    unsigned slot; // 1-based; 0 = none yet
  };

  static ThreadRecord &record() {
    static thread_local ThreadRecord r
        __attribute__((tls_model("initial-exec"))) = {nullptr, 0};
    return r;
  }

  static void threadExit(void *value) {
    auto *r = static_cast<ThreadRecord *>(value);
    if (r->owner && r->slot)
      r->owner->users_[r->slot - 1].fetch_sub(1, std::memory_order_relaxed);
    r->slot = 0;
  }

  unsigned slot() {
    ThreadRecord &r = record();
    if (__builtin_expect(r.slot != 0, 1))
      return r.slot - 1;
    unsigned best = 0;
    for (unsigned i = 1; i < N; ++i)
      if (users_[i].load(std::memory_order_relaxed) <
          users_[best].load(std::memory_order_relaxed))
        best = i;
    users_[best].fetch_add(1, std::memory_order_relaxed);
    r = ThreadRecord{this, best + 1};
    {
      std::lock_guard<SpinLock> guard(hook_lock_);
      hook_.init(&ThreadHeap::threadExit);
    }
    hook_.arm(&r);
    return best;
  }

  // Each heap on its own cache lines: a heap's lock and hot list heads are
  // written on every call, and must not share a line with its neighbour's.
  struct alignas(64) Slot {
    Super heap;
  };
  Slot slots_[N]{};
  std::atomic<unsigned> users_[N] = {};
  SpinLock hook_lock_;
  os::ThreadExitHook hook_;
};

static_assert(SizedHeapLayer<ThreadHeap<2, detail::ProbeHeap>> &&
              OwningHeapLayer<ThreadHeap<2, detail::ProbeHeap>>);

} // namespace defero
