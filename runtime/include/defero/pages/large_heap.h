// large_heap.h - LargeHeap: the process heap's blocks above the size
// classes. Up to kFitMaxBlock they are cut from a FitRegion (address-
// ordered best fit with coalescing, whole pages; their memory given back
// after DEFERO_DECAY_MS); larger ones, and blocks aligned past a page, are
// mappings of their own (MmapHeap, whose cache keeps freed mappings of up
// to 4 MiB). One registry (MmapHeap's page map) records every live block's
// length, so free and realloc find it with no lock.
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
    if (all && g_decay_ms != ~std::uint32_t{0})
      region_.decay(os::now_ms(), 0, true);
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
    if (g_decay_ms != ~std::uint32_t{0})
      region_.decay(os::now_ms(), g_decay_ms, false);
    noteLocked();
  }
  void noteLocked() {
    region_held_.store(region_.topBytes() - region_.releasedBytes(), std::memory_order_relaxed);
    region_released_.store(region_.releasedBytes(), std::memory_order_relaxed);
    std::uint32_t stamp, due = ~std::uint32_t{0};
    if (g_decay_ms != ~std::uint32_t{0} && region_.oldestResident(stamp)) {
      due = stamp + g_decay_ms;
      if (due == ~std::uint32_t{0})
        due = 0;
    }
    g_large_due.store(due, std::memory_order_relaxed);
  }

  SpinLock lock_; ///< the fit region
  FitRegion region_;
  std::atomic<std::size_t> region_held_{0}, region_released_{0};
  MmapHeap mmap_;
};

} // namespace defero::pages
