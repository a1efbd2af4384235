// ticket_lock.h - a FIFO (ticket) lock whose waiters spin briefly, then sleep.
//
// Guarantee: mutual exclusion, and threads get the lock in the order they
// asked for it, so a long critical section (the real-time heap simulating
// its hardware for microseconds) cannot starve one thread while others
// take turns. Waiters sleep on a futex after a short spin, so more
// threads than processors do not convoy. Never allocates; constexpr
// constructor. After fork() the child must call resetInChild() instead of
// unlock().
#pragma once

#include <atomic>

#include "defero/platform/os.h"

namespace defero {

class TicketLock {
public:
  constexpr TicketLock() = default;
  TicketLock(const TicketLock &) = delete;
  TicketLock &operator=(const TicketLock &) = delete;

  void lock() {
    const unsigned me = next_.fetch_add(1, std::memory_order_seq_cst);
    for (int spins = 0; spins < 64; ++spins)
      if (serving_.load(std::memory_order_acquire) == me)
        return;
    // The holder, or the thread whose turn comes before ours, may be off
    // the processor: a yielding waiter would burn its time slices until the
    // scheduler happens to run that thread (a convoy: seconds per thousand
    // turns with more threads than cores). Sleep until the number served
    // changes instead.
    for (unsigned seen; (seen = serving_.load(std::memory_order_acquire)) != me;)
      os::waitWhile(&serving_, seen);
  }
  void unlock() {
    // The read-modify-write orders the store before the read of next_, so a
    // waiter that took its ticket and went to sleep is always seen.
    const unsigned now = serving_.fetch_add(1, std::memory_order_seq_cst) + 1;
    if (next_.load(std::memory_order_seq_cst) != now)
      os::wakeAll(&serving_);
  }

  /// Threads holding or waiting for the lock (a snapshot, for tests).
  unsigned queued() const {
    return next_.load(std::memory_order_relaxed) - serving_.load(std::memory_order_relaxed);
  }
  /// In a forked child holding the lock: the tickets of the parent's
  /// other waiters will never be served there, so start afresh, unlocked.
  void resetInChild() {
    next_.store(0, std::memory_order_relaxed);
    serving_.store(0, std::memory_order_release);
  }

private:
  std::atomic<unsigned> next_{0};
  alignas(64) std::atomic<unsigned> serving_{0};
  static_assert(sizeof(std::atomic<unsigned>) == 4 &&
                    std::atomic<unsigned>::is_always_lock_free,
                "the futex word is 32 bits");
};

} // namespace defero
