// fork.cpp - the process heap across fork(): every lock held while the
// process forks, the other threads' heaps left untouched in the child, and
// the child's own trace file when DEFERO_TRACE names the process.
#include <unistd.h>

#include "process_heap.h"

namespace defero {

// Every lock is held across fork() so the child never inherits a structure
// another thread was halfway through changing. Order: registry, trace, the
// heap lists, the arena, large (the order the allocator nests them in).
//
// Cost: nothing on any allocation; a fork takes each lock once. The
// owners' paths take no lock: a thread's heap is its own, so in the child
// the heaps of the other threads (which do not exist there) are left
// untouched, their free memory unused by the child (a child that execs or
// exits soon, the common case, loses nothing). A remote free in flight is
// either in its list or not: at worst a block is leaked in the child,
// never corrupted.

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
  // The heaps of the threads the child lost are left as they are, never
  // swept nor adopted: their owners take no lock on their slow paths, so
  // one may have been halfway through changing its lists when the process
  // forked (a sweep that freed into a span off its list crashed the child:
  // stress.fork_preload, about one run in 30 under load). The blocks the
  // child frees into them stay on their remote lists. The heaps that were
  // orphans already (changed only under heaps_lock_, held across fork)
  // stay orphans, for the child's threads to adopt.
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
