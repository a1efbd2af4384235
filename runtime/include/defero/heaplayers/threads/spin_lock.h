// spin_lock.h - a test-and-test-and-set lock that yields after spinning.
//
// Guarantee: mutual exclusion; never allocates (safe inside malloc); a
// constexpr constructor so heaps holding it are constant-initialised and
// usable before any static constructor has run.
#pragma once

#include <atomic>

#include "defero/platform/os.h"

namespace defero {

class SpinLock {
public:
  constexpr SpinLock() = default;
  SpinLock(const SpinLock &) = delete;
  SpinLock &operator=(const SpinLock &) = delete;

  void lock() {
    for (;;) {
      if (!held_.exchange(true, std::memory_order_acquire))
        return;
      // Spin on a plain load (no cache-line ping-pong), then yield: with two
      // cores a holder that was preempted must get to run.
      for (int spins = 0; held_.load(std::memory_order_relaxed); ++spins) {
        if (spins >= 256) {
          os::yield();
          spins = 0;
        }
        os::pause();
      }
    }
  }
  bool try_lock() { return !held_.exchange(true, std::memory_order_acquire); }
  void unlock() { held_.store(false, std::memory_order_release); }

private:
  std::atomic<bool> held_{false};
};

} // namespace defero
