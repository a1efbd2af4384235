// large_heap.h - LargeHeap: the process heap's blocks above the size
// classes that a thread's mid heap (mid_heap.h, up to 32 MiB) does not
// serve: larger ones, page-aligned ones, and those of a thread whose mid
// slice is full or could not be reserved (valgrind, ulimit -v). Up to
// kFitMaxBlock they are cut from a FitRegion (address-
// ordered best fit with coalescing, whole pages; their memory given back
// after DEFERO_DECAY_MS); larger ones, and blocks aligned past a page, are
// mappings of their own (MmapHeap), and a freed mapping above kFitMaxBlock
// is kept for DEFERO_DECAY_MS for the next request it holds (up to 4 of
// them, 256 MiB). One registry (MmapHeap's page map) records every live
// block's length, so free and realloc find it with no lock.
//
// Why a fit region: a mapping per block (as before) kept every size the
// program freed in a cache of mappings (32 MiB of them counted in cc1plus's
// 9.7 MB heap) and could not give one block's memory to a request of
// another size; a block freed here merges with its free neighbours and
// the next request of any size takes the best-fitting run.
//
// Costs: a take or a give is a spin lock and a bin search of at most
// FitRegion::kScan runs; the per-thread MmapThreadCache in front (blocks
// up to 256 KiB) serves a thread's churn of a few sizes with no lock.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "defero/heaplayers/threads/spin_lock.h"
#include "defero/heaplayers/top/fit_region.h"
#include "defero/heaplayers/top/mmap_heap.h"
#include "defero/pages/span_heap.h"
#include "defero/platform/os.h"

namespace defero::pages {

class LargeHeap {
public:
  /// Blocks of up to this many bytes come from the fit region (as glibc's
  /// mmap threshold reaches at most 32 MiB); larger ones are mapped.
  static constexpr std::size_t kFitMaxBlock = std::size_t{32} << 20;

  constexpr LargeHeap() = default;

  /// At least sz bytes aligned to `align`; `fresh`: zero-filled; `got`:
  /// the block's length. nullptr: out of memory.
  void *mallocAligned(std::size_t sz, std::size_t align, bool *fresh, std::size_t *got) {
    const std::size_t bytes = (sz + FitRegion::kPageBytes - 1) & ~(FitRegion::kPageBytes - 1);
    if (bytes >= sz && bytes != 0 && bytes <= kFitMaxBlock && align <= FitRegion::kPageBytes) {
      bool f = false;
      void *p;
      {
        std::lock_guard<SpinLock> guard(lock_);
        p = region_.take(bytes, f);
        decayLocked();
      }
      if (p) {
        if (!mmap_.adopt(p, bytes)) {
          give(p, bytes);
          return nullptr;
        }
        if (fresh)
          *fresh = f;
        if (got)
          *got = bytes;
        return p;
      }
    }
    if (bytes >= sz && bytes > kFitMaxBlock && align <= FitRegion::kPageBytes) {
      if (void *p = takeKept(bytes)) {
        if (!mmap_.adopt(p, bytes)) {
          mmap_.release(p, bytes);
          return nullptr;
        }
        if (fresh)
          *fresh = false;
        if (got)
          *got = bytes;
        return p;
      }
    }
    return mmap_.mallocAligned(sz, align, fresh, got);
  }

  /// Takes p, a live block, out of the registry and says its length (0:
  /// not ours or not live, nothing touched).
  std::size_t unregister(void *p) { return mmap_.unregister(p); }
  /// Puts a block the caller unregistered back in the registry.
  bool adopt(void *p, std::size_t bytes) { return mmap_.adopt(p, bytes); }
  /// Frees a block the caller unregistered: into the fit region, or its
  /// mapping cached or unmapped.
  void release(void *p, std::size_t bytes) {
    if (region_.contains(p))
      give(p, bytes);
    else if (bytes > kFitMaxBlock)
      keep(p, bytes);
    else
      mmap_.release(p, bytes);
  }

  /// Grows or shrinks a block: a region block in place (its tail given
  /// back, or the free run above it taken), a mapping by moving its pages.
  /// nullptr (block unchanged): it cannot, or p is not ours; the caller
  /// then copies.
  void *remap(void *p, std::size_t sz) {
    if (!region_.contains(p))
      return mmap_.remap(p, sz);
    const std::size_t bytes = (sz + FitRegion::kPageBytes - 1) & ~(FitRegion::kPageBytes - 1);
    if (bytes < sz || bytes == 0 || bytes > kFitMaxBlock)
      return nullptr;
    const std::size_t old = mmap_.unregister(p);
    if (old == 0)
      return nullptr;
    bool ok = true;
    if (bytes < old) {
      give(static_cast<char *>(p) + bytes, old - bytes);
    } else if (bytes > old) {
      std::lock_guard<SpinLock> guard(lock_);
      ok = region_.growInPlace(p, old, bytes);
      noteLocked();
    }
    mmap_.adopt(p, ok ? bytes : old); // (its leaf exists: it held the entry)
    return ok ? p : nullptr;
  }

  std::size_t getSize(const void *p) const { return mmap_.getSize(p); }

  /// Bytes the large blocks hold from the OS: mappings (cached ones too)
  /// and the fit region's pages not given back. Read without the lock.
  std::size_t mappedBytes() const {
    return mmap_.mappedBytes() + region_held_.load(std::memory_order_relaxed);
  }
  /// Bytes of the fit region's free runs that are back with the OS.
  std::size_t releasedBytes() const { return region_released_.load(std::memory_order_relaxed); }

  /// Gives the memory of free runs back as DEFERO_DECAY_MS says (every
  /// free run's with `all`, unless the delay is `never`).
  void decay(bool all) {
    std::lock_guard<SpinLock> guard(lock_);
    if (all && g_decay_ms != ~std::uint32_t{0}) {
      region_.decay(os::now_ms(), 0, true);
      while (kept_n_)
        dropKept(0);
    }
    decayLocked();
  }

  void lockHeap() {
    lock_.lock();
    mmap_.lockHeap();
  }
  void unlockHeap() {
    mmap_.unlockHeap();
    lock_.unlock();
  }

private:
  void give(void *p, std::size_t bytes) {
    std::lock_guard<SpinLock> guard(lock_);
    if (!region_.give(p, bytes, os::now_ms()))
      os::discard(p, bytes); // no record for the run: its pages stay lost, not resident
    decayLocked();
  }
  void decayLocked() {
    if (g_decay_ms != ~std::uint32_t{0}) {
      const std::uint32_t now = os::now_ms();
      region_.decay(now, g_decay_ms, false);
      while (kept_n_ && now - kept_[0].stamp >= g_decay_ms)
        dropKept(0);
    }
    noteLocked();
  }

  // Freed mappings above kFitMaxBlock, kept for DEFERO_DECAY_MS (oldest
  // first; at most kKept of them, kKeptBytes in all) and handed to the next
  // request they hold, their tail past it unmapped: a program that makes
  // and drops big buffers does not fault their pages in every time.
  struct Kept {
    void *p;
    std::size_t bytes;
    std::uint32_t stamp;
  };
  static constexpr unsigned kKept = 4;
  static constexpr std::size_t kKeptBytes = std::size_t{256} << 20;

  void keep(void *p, std::size_t bytes) {
    if (g_decay_ms == 0 || g_decay_ms == ~std::uint32_t{0} || bytes > kKeptBytes) {
      mmap_.release(p, bytes); // (`never` keeps no mapping: it would be for good)
      return;
    }
    std::lock_guard<SpinLock> guard(lock_);
    while (kept_n_ == kKept || kept_bytes_ + bytes > kKeptBytes)
      dropKept(0);
    kept_[kept_n_++] = Kept{p, bytes, os::now_ms()};
    kept_bytes_ += bytes;
    decayLocked();
  }
  /// The smallest kept mapping that holds `bytes`, trimmed to it; nullptr
  /// if none.
  void *takeKept(std::size_t bytes) {
    std::lock_guard<SpinLock> guard(lock_);
    unsigned best = kKept;
    for (unsigned i = 0; i < kept_n_; ++i)
      if (kept_[i].bytes >= bytes && (best == kKept || kept_[i].bytes < kept_[best].bytes))
        best = i;
    if (best == kKept)
      return nullptr;
    const Kept k = kept_[best];
    removeKept(best);
    mmap_.trim(k.p, k.bytes, bytes);
    noteLocked();
    return k.p;
  }
  void dropKept(unsigned i) {
    const Kept k = kept_[i];
    removeKept(i);
    mmap_.release(k.p, k.bytes);
  }
  void removeKept(unsigned i) {
    kept_bytes_ -= kept_[i].bytes;
    --kept_n_;
    for (; i < kept_n_; ++i) // (age order kept)
      kept_[i] = kept_[i + 1];
  }
  void noteLocked() {
    region_held_.store(region_.topBytes() - region_.releasedBytes(), std::memory_order_relaxed);
    region_released_.store(region_.releasedBytes(), std::memory_order_relaxed);
    std::uint32_t stamp, due = ~std::uint32_t{0};
    bool any = region_.oldestResident(stamp);
    if (kept_n_ && (!any || static_cast<std::int32_t>(kept_[0].stamp - stamp) < 0)) {
      stamp = kept_[0].stamp;
      any = true;
    }
    if (g_decay_ms != ~std::uint32_t{0} && any) {
      due = stamp + g_decay_ms;
      if (due == ~std::uint32_t{0})
        due = 0;
    }
    g_large_due.store(due, std::memory_order_relaxed);
  }

  SpinLock lock_; ///< the fit region and the kept mappings
  FitRegion region_;
  Kept kept_[kKept] = {};
  unsigned kept_n_ = 0;
  std::size_t kept_bytes_ = 0;
  std::atomic<std::size_t> region_held_{0}, region_released_{0};
  MmapHeap mmap_;
};

} // namespace defero::pages
