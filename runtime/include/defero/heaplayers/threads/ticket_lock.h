// ticket_lock.h - a FIFO (ticket) lock that yields while it waits.
//
// Guarantee: mutual exclusion, and threads get the lock in the order they
// asked for it, so a long critical section (the real-time heap simulating
// its hardware for microseconds) cannot starve one thread while others
// take turns. Never allocates; constexpr constructor. After fork() the
// child must call resetInChild() instead of unlock().
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
    const unsigned me = next_.fetch_add(1, std::memory_order_relaxed);
    for (int spins = 0; serving_.load(std::memory_order_acquire) != me; ++spins) {
      if (spins >= 64) {
        os::yield();
        spins = 0;
      }
    }
  }
  void unlock() {
    serving_.store(serving_.load(std::memory_order_relaxed) + 1,
                   std::memory_order_release);
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
};

} // namespace defero
