// locked_heap.h - LockedHeap: serialises every call into Super.
//
// Guarantee: Super is entered by one thread at a time. The lock is exposed
// (lockHeap/unlockHeap) so fork handlers can hold every heap across fork().
// Hinted entry points of Super (mallocNear, mallocPath) are forwarded under
// the same lock when Super has them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "defero/heaplayers/heap_layer.h"
#include "defero/heaplayers/threads/spin_lock.h"

namespace defero {

template <class LockType, class Super> class LockedHeap : public Super {
public:
  void *malloc(std::size_t sz) {
    std::lock_guard<LockType> guard(lock_);
    return Super::malloc(sz);
  }
  void free(void *p) {
    std::lock_guard<LockType> guard(lock_);
    Super::free(p);
  }
  std::size_t getSize(const void *p)
    requires SizedHeapLayer<Super>
  {
    std::lock_guard<LockType> guard(lock_);
    return Super::getSize(p);
  }
  void *mallocNear(std::size_t sz, const void *hint)
    requires requires(Super s) { s.mallocNear(sz, hint); }
  {
    std::lock_guard<LockType> guard(lock_);
    return Super::mallocNear(sz, hint);
  }
  void *mallocPath(std::size_t sz, std::uint64_t bits, unsigned depth)
    requires requires(Super s) { s.mallocPath(sz, bits, depth); }
  {
    std::lock_guard<LockType> guard(lock_);
    return Super::mallocPath(sz, bits, depth);
  }
  /// Runs `f(super)` under the lock: for compound operations (statistics
  /// snapshots, invariant checks) that must see one consistent heap.
  template <class F> decltype(auto) withLock(F &&f) {
    std::lock_guard<LockType> guard(lock_);
    return f(static_cast<Super &>(*this));
  }

  void lockHeap() { lock_.lock(); }
  void unlockHeap() { lock_.unlock(); }

private:
  alignas(64) LockType lock_; // its own line: written by every call
};

static_assert(SizedHeapLayer<LockedHeap<SpinLock, detail::ProbeHeap>>);

} // namespace defero
