// container_registry.h - the containers that have a policy of their own
// (from __defero_container_policy), shared by every thread.
//
// An open-addressed table of kSlots entries in lazily committed memory,
// under one spin lock; never allocates. Threads do not read it on every
// hinted allocation: each keeps the policy in its own container cache
// (pages::ContainerSlot) and reads the table again only when epoch()
// changed, which every setPolicy does. Until the first policy is set,
// used() is false and nothing reads it at all.
//
// Cost: nothing on a hint until a policy exists; then one lookup under the
// lock per container a thread places for, after each setPolicy (a hash and
// usually one probe); setPolicy itself the same plus the epoch's bump.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "defero/heaplayers/threads/spin_lock.h"
#include "defero/kbit/predicate.h"
#include "defero/platform/os.h"

namespace defero {

class ContainerRegistry {
public:
  struct Entry {
    const void *container = nullptr;
    std::int8_t policy = -1; // -1: the process default
    std::uint8_t k = 0;      // 0: the process default
  };

  /// Records a policy for `c`. False if the table could not be mapped.
  bool setPolicy(const void *c, Predicate p, unsigned k) {
    std::lock_guard<SpinLock> guard(lock_);
    Entry *e = slotLocked(c, true);
    if (!e)
      return false;
    if (e->policy < 0)
      ++policies_;
    e->policy = static_cast<std::int8_t>(p);
    e->k = static_cast<std::uint8_t>(k);
    used_ = true;
    epoch_.store(epoch_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    return true;
  }

  /// Copies c's entry into out; false if c is unknown.
  bool lookup(const void *c, Entry &out) {
    if (!used_)
      return false;
    std::lock_guard<SpinLock> guard(lock_);
    Entry *e = slotLocked(c, false);
    if (!e)
      return false;
    out = *e;
    return true;
  }

  bool used() const { return used_.load(std::memory_order_relaxed); }
  /// Changes whenever a policy is set (never 0 once one is).
  std::uint32_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  /// Containers that have a policy of their own now.
  std::size_t policies() {
    std::lock_guard<SpinLock> guard(lock_);
    return policies_;
  }
  void lockRegistry() { lock_.lock(); }
  void unlockRegistry() { lock_.unlock(); }

private:
  static constexpr std::size_t kSlots = 1u << 16;
  static constexpr std::size_t kWindow = 16;

  Entry *slotLocked(const void *c, bool create) {
    if (!table_) {
      if (!create)
        return nullptr;
      table_ = static_cast<Entry *>(os::map_sparse(kSlots * sizeof(Entry)));
      if (!table_)
        return nullptr;
    }
    const auto key = reinterpret_cast<std::uintptr_t>(c);
    const std::size_t h = (key >> 4) * 0x9E3779B97F4A7C15ull >> 48;
    Entry *victim = nullptr;
    for (std::size_t i = 0; i < kWindow; ++i) {
      Entry &e = table_[(h + i) & (kSlots - 1)];
      if (e.container == c)
        return &e;
      if (!e.container) {
        if (!create)
          return nullptr;
        e = Entry{c, -1, 0};
        return &e;
      }
      if (!victim && e.policy < 0)
        victim = &e;
    }
    if (!create)
      return nullptr;
    if (!victim)
      victim = &table_[h & (kSlots - 1)];
    if (victim->policy >= 0)
      --policies_;
    *victim = Entry{c, -1, 0};
    return victim;
  }

  SpinLock lock_;
  Entry *table_ = nullptr;
  std::size_t policies_ = 0;
  std::atomic<bool> used_{false}; // read without the lock (a fast "no")
  std::atomic<std::uint32_t> epoch_{0};
};

} // namespace defero
