// fork.cpp - the process heap across fork(): every lock held while the
// process forks, the child's heaps orphaned but the forking thread's, and
// the child's own trace file when DEFERO_TRACE names the process.
#include <unistd.h>

#include "process_heap.h"

namespace defero {

// Every lock is held across fork() so the child never inherits a structure
// another thread was halfway through changing. Order: registry, trace, the
// heap lists, the arena, large (the order the allocator nests them in).
//
// Cost: nothing on any allocation; a fork takes each lock once (and the
// child walks its heap list once to orphan the heaps of threads it lost).
// The owners' fast paths take no lock: a thread's heap is its own, and in
// the child every heap but the forking thread's becomes an orphan (its
// thread does not exist there). A remote free in flight is either in its
// list or not: at worst a block is leaked in the child, never corrupted.

void ProcessHeap::forkPrepare() {
  if constexpr (kRealtimeBuild) {
    if (rt_) // first: the model's own allocations nest inside it
      rt_->lock();
  }
  registry_.lockRegistry();
  trace_.lockLog();
  heaps_lock_.lock();
  PageArena::get().lockAll();
  pages::MidArena::get().lockArena();
  large_.lockHeap();
}

void ProcessHeap::forkParent() { unlockAfterFork(false); }

void ProcessHeap::forkChild() {
  // The parent still holds (and will write) the events buffered before the
  // fork: the child must not write them a second time.
  trace_.discardBuffered();
  // A trace that names the process (DEFERO_TRACE holds %p): the child
  // writes a file of its own from here on, and the parent's stays its own.
  if (cfg_.trace_pattern && trace_.enabled()) {
    const int inherited = trace_.fd();
    trace_.open(openChildTrace(cfg_.trace_pattern, ::getppid()));
    os::close_fd(inherited);
  }
  LocalHeap *mine = tls.heap;
  orphans_ = nullptr;
  for (LocalHeap *h = heaps_; h; h = h->next_heap) {
    h->next_orphan = nullptr;
    if (h != mine) {
      h->next_orphan = orphans_;
      orphans_ = h;
    }
  }
  unlockAfterFork(true);
}

/// Releases what forkPrepare took, in the reverse order.
void ProcessHeap::unlockAfterFork(bool child) {
  large_.unlockHeap();
  pages::MidArena::get().unlockArena();
  PageArena::get().unlockAll();
  heaps_lock_.unlock();
  trace_.unlockLog();
  registry_.unlockRegistry();
  if constexpr (kRealtimeBuild) {
    if (rt_ && child)
      rt_->unlockInChild();
    else if (rt_)
      rt_->unlock();
  }
}

} // namespace defero
