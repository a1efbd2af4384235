// mid_heap.h - MidHeap: a thread's blocks of 4 KiB-32 MiB (requests above
// 4 KiB up to kMaxBlock, not aligned, not hinted), by address-ordered best
// fit with coalescing at a 256-byte unit, in a slice of one reserved window
// (MidArena) that belongs to the thread's heap.
//
// Why past the size classes' 32 KiB, up to the large heap's fit limit: the
// large heap is one region behind one lock, and two threads that each
// churn 64 KiB buffers (malloc_benchmark's 64 KiB mix, batches of 1000)
// spent 40% of their time spinning on it, at 0.42x mimalloc's throughput
// (60-73 M pairs/s; 152-179 here, mimalloc 148-154). And one region for
// every size a thread asks for merges what a big block freed with what a
// small one wants, where the split at 32 KiB kept each side's high-water
// mark: cc1plus's trace 31.5 -> 27.9% fragmentation, python3's 12.6 ->
// 10.2% (a split at 256 KiB made them worse, 38.5 and 13.8%). A block
// longer than the cache keeps goes straight back to the region and reads
// the clock there, so its memory goes back after DEFERO_DECAY_MS as the
// large heap's did; the owner's realloc of one resizes it in place when
// the run above is free (resize).
//
// Why not size classes: a span of a class serves that class only, so a
// program whose middle-sized blocks come and go in shifting sizes (a
// compiler's buffers, a phase change) keeps every class's own high-water
// mark. Here a freed block merges with its free neighbours and the next
// request of any size takes the best-fitting run (Johnstone and Wilson's
// best policy, about 1% fragmentation on real programs), as glibc does
// above its small bins: cc1plus's trace 37.9 -> 31.3%. Requests round up to
// 256 bytes, less than the classes' four per doubling. Below 4 KiB the
// classes stay: a region take or give touches about eight scattered lines
// of bookkeeping, and malloc_benchmark's 16-4096 B mix ran 3x slower with
// 1-4 KiB here (the README's fifteenth-session section).
//
// In front of the region, a cache of the thread's freed blocks by length
// (a LIFO list per length, through the blocks' first words; at most 256
// KiB) serves the next request of the same length, as glibc's tcache does.
// Every kSweepEvery calls, each length gives the region three quarters of
// the blocks that sat in the cache since the last sweep (its low-water
// mark, as jemalloc's thread cache is collected), so the memory of lengths
// no longer asked for merges back within a few thousand calls. Lengths of
// 32-64 KiB are cached by demand (kDemandUnits): a bin keeps blocks only
// once the thread asks again for a length it gave the region, twice as
// many each time that happens (at most 16, 1 MiB for them all), half as
// many after a sweep finds some unused, and none once the spans grow
// (releaseFree). malloc_benchmark's 64 KiB mix (16 such blocks a batch of
// 1000) took about 760 instructions a block in the region's cut and merge
// (84.2 a pair against mimalloc's 69.0; 75.2 now); real programs ask for
// these lengths rarely (cc1plus: 399 of 1M requests), and the cap keeps
// their cache from being a pool of its own (trace replay, nine traces:
// mean 13.8 -> 13.4%; a plain 2 MiB cache made cc1plus 18.1 -> 22.8%).
//
// One pool with the spans: memory the region takes that was not resident
// (fresh, or given back) makes the heap give back as much of its Empty
// spans' memory first (SpanHeap::releaseEmpty), and a fresh span (or an
// Empty one whose memory went back) makes it give back its free runs'
// (releaseFree, from SpanHeap::makeRoom): a program whose sizes move
// between the classes and the region does not hold both pools' free
// memory resident (soak_phases, the phase from 1-4 KiB to 4-16 KiB: 623 ->
// 405 MB). Nor the region its own: when its slice's top grows (no free
// run held the block), it gives back the memory of its oldest resident
// free runs first, at least as much, whatever their age (giveBackIdle),
// and the spans only the rest: a compiler's tables that outgrow the holes
// its freed buffers left do not keep those holes resident too (trace
// replay, g++'s cc1plus processes: 34.1 -> 22.7% and 25.7 -> 21.4%,
// python3 8.1 -> 6.2%). And the classes fill the gaps: a class of 512 B to
// 4 KiB that would grow by a span takes a free run of 4 KiB or less
// instead (mallocHole: memory no middle-sized block fits, as glibc's small
// chunks fill its heap's gaps; cc1plus 23.2 -> 21.2%).
//
// Owner only, no lock: the heap's thread takes and gives; another thread's
// free marks the block freed in its tag (one atomic or: a second free is
// caught there) and pushes it onto the heap's lock-free list of remote
// frees (one CAS; a Treiber stack through the blocks' first words), which
// the owner takes whole (one exchange) before its next region take and at
// every sweep; a thread exit sweeps the heaps whose thread is gone. A
// block's length is its start tag in the region (BasicFitRegion::markLive,
// with a bit for "freed"), so a free that names no live block's start, or
// a block already freed, is a one-line error, not corruption. Free runs'
// memory goes back to the OS after DEFERO_DECAY_MS (at once over
// DEFERO_MAX_RESIDENT), stamped and checked by the clock read at each
// sweep and on the span heap's slow paths. A freed block of 64 KiB or
// more that is half again as long as the last one given back (the first
// such block: any) gives its memory back at once (kReleaseFrom), as glibc
// unmaps its mapped chunks and raises its mapping threshold to their
// length: a program's outgrown buffers do not wait for the delay while it
// faults in their successors, and a length freed and made again keeps its
// memory. Fragmentation by trace replay, mean of nine traces 15.1 -> 13.8
// (g++'s fifth process 12.0 -> 4.9, debruijn_net 29.0 -> 26.6); the
// 5-25 MiB blocks of churn_bench large go back as often as before (11
// madvise calls a run, by strace; 115-152 -> 129-146 ms in four alternated
// runs); with the threshold at each length (glibc's rule) 13.8 and 215
// ms, without a threshold 12.1 and 3.4-3.6 s.
//
// Costs: a cached take or give, the bin's head, the block's first word and
// its tag; a region take, a bin lookup (a bitmap scan, a bin per length up
// to 128 units) and a cut; a region give, two tag reads and the merges;
// counters, plain adds. When the window cannot be reserved, its slices are
// all taken (256 heaps), or a slice is full, malloc returns nullptr and the
// caller serves the request from the size classes or the large heap.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "defero/heaplayers/threads/spin_lock.h"
#include "defero/heaplayers/top/fit_region.h"
#include "defero/pages/counters.h"
#include "defero/platform/os.h"

namespace defero::pages {

class MidHeap;

/// The window the mid heaps' slices are cut from: 64 GiB of address space
/// (halved down to 1 GiB where that cannot be reserved), reserved (not
/// committed) at the first slice, a 256 MiB slice per heap.
class MidArena {
public:
  static constexpr unsigned kSliceShift = 28;
  static constexpr std::size_t kSliceBytes = std::size_t{1} << kSliceShift;
  static constexpr unsigned kSlices = 256;
  static constexpr unsigned kMinSlices = 4;

  static MidArena &get() {
    static constinit MidArena instance;
    return instance;
  }

  /// Whether p lies in a slice handed out (lock-free: any thread).
  bool contains(const void *p) const {
    return reinterpret_cast<std::uintptr_t>(p) - base() <
           __atomic_load_n(&bytes_, __ATOMIC_ACQUIRE);
  }
  /// The heap whose slice holds p (contains(p) true).
  MidHeap *ownerOf(const void *p) const {
    return __atomic_load_n(
        &owners_[(reinterpret_cast<std::uintptr_t>(p) - base()) >> kSliceShift],
        __ATOMIC_ACQUIRE);
  }
  /// A slice for h (its base), or nullptr: no window, or none left.
  void *claim(MidHeap *h) {
    std::lock_guard<SpinLock> guard(lock_);
    if (failed_ || next_ == slices_)
      return nullptr;
    if (!base_) {
      // (Fewer slices where the address space is short: valgrind maps at
      // most some tens of GiB, so callgrind counts the mid heap too.)
      void *w = nullptr;
      for (slices_ = kSlices; slices_ >= kMinSlices && !w; slices_ /= 2)
        w = os::map_sparse(kSliceBytes * slices_ + kSliceBytes);
      if (!w) {
        slices_ = 0;
        failed_ = true;
        return nullptr;
      }
      slices_ *= 2; // (the loop halved it once past the mapping that worked)
      // (Aligned to a slice: a block never straddles two.)
      const std::uintptr_t b = (reinterpret_cast<std::uintptr_t>(w) + kSliceBytes - 1) &
                               ~(kSliceBytes - 1);
      __atomic_store_n(&base_, b, __ATOMIC_RELEASE);
    }
    const unsigned i = next_++;
    __atomic_store_n(&owners_[i], h, __ATOMIC_RELEASE);
    __atomic_store_n(&bytes_, std::uintptr_t{next_} * kSliceBytes, __ATOMIC_RELEASE);
    return reinterpret_cast<void *>(base_ + std::uintptr_t{i} * kSliceBytes);
  }

  /// Held across fork() (fork.cpp), so a child never inherits it locked.
  void lockArena() { lock_.lock(); }
  void unlockArena() { lock_.unlock(); }

private:
  std::uintptr_t base() const { return __atomic_load_n(&base_, __ATOMIC_ACQUIRE); }

  SpinLock lock_;
  std::uintptr_t base_ = 0;
  std::uintptr_t bytes_ = 0; ///< of slices handed out (0: contains() is false)
  unsigned next_ = 0;
  unsigned slices_ = kSlices; ///< in the window (fewer if it was short)
  bool failed_ = false;
  MidHeap *owners_[kSlices] = {};
};

/// Bytes of mid slices ever handed out, and of their free runs back with
/// the OS, every heap's (for the footprint and the stats).
inline std::atomic<std::int64_t> g_mid_top{0}, g_mid_released{0};

class MidHeap {
public:
  using Region = BasicFitRegion<256, 128, false>;
  static constexpr std::size_t kUnitBytes = Region::kPageBytes;

  constexpr MidHeap() = default;
  MidHeap(const MidHeap &) = delete;
  MidHeap &operator=(const MidHeap &) = delete;

  /// Requests up to this many bytes (the large heap's fit limit; a slice
  /// holds eight such blocks).
  static constexpr std::size_t kMaxBlock = std::size_t{32} << 20;

  /// A block of at least sz bytes (at most kMaxBlock; the owner), or
  /// nullptr (the caller uses the size classes or the large heap). `got`:
  /// its usable bytes; `fresh` (if not null): zero-filled, never handed
  /// out before.
  void *malloc(std::size_t sz, std::size_t *got, bool *fresh_out = nullptr) {
    const std::size_t units = (sz + kUnitBytes - 1) / kUnitBytes;
    if (fresh_out)
      *fresh_out = false;
    *got = units * kUnitBytes;
    if (void *p = takeCached(units))
      return p;
    if (__builtin_expect(!region_.ready(), 0) && !attach())
      return nullptr;
    if (__builtin_expect(remote_.load(std::memory_order_relaxed) != nullptr, 0))
      collect();
    const std::size_t bytes = units * kUnitBytes;
    bool fresh = false;
    void *p = cached_ ? consolidatedFit(bytes) : nullptr;
    if (!p)
      p = region_.take(bytes, fresh);
    if (__builtin_expect(!p, 0))
      return nullptr;
    if (fresh_out)
      *fresh_out = fresh;
    tookFromRegion(p, bytes, fresh);
    return p;
  }

  /// A block of exactly `bytes` (a multiple of kUnitBytes, at most the
  /// cache's longest) from memory this heap holds free already: its cache
  /// of that length, else a free run of the region by best fit, never the
  /// slice's untouched top; nullptr if neither has one. For a size class
  /// that would otherwise grow the heap by a span (SpanHeap::mallocHole):
  /// the classes' blocks fill the holes the middle-sized blocks left, as
  /// glibc's small chunks fill the gaps of its heap. The block is this
  /// heap's like any (free, realloc and malloc_usable_size find it by its
  /// address).
  void *mallocHole(std::size_t bytes) {
    const std::size_t units = bytes / kUnitBytes;
    if (void *p = takeCached(units))
      return p;
    if (!region_.ready())
      return nullptr;
    if (__builtin_expect(remote_.load(std::memory_order_relaxed) != nullptr, 0))
      collect();
    void *p = region_.takeFit(bytes, kHoleUnits);
    if (p)
      tookFromRegion(p, bytes, false);
    return p;
  }

  /// The owner grows or shrinks its live block p, longer than the cache
  /// keeps, to `bytes` (a multiple of kUnitBytes, longer too) in place: a
  /// shrink gives the tail back to the region (merged with the free run
  /// above), a grow takes the free run above it or the slice's untouched
  /// top. false (nothing changed): it cannot.
  bool resize(void *p, std::size_t bytes) {
    constexpr std::size_t kCachedMax = kMaxUnits * kUnitBytes;
    const std::size_t old = usableSize(p);
    if (old <= kCachedMax || bytes <= kCachedMax || bytes % kUnitBytes != 0)
      return false;
    if (bytes < old) {
      region_.give(static_cast<char *>(p) + bytes, old - bytes, now_);
      bytes_out_.add(old - bytes);
      region_taken_ -= static_cast<std::int64_t>(old - bytes);
    } else if (bytes > old) {
      const std::size_t top = region_.topBytes();
      if (!region_.growInPlace(p, old, bytes))
        return false;
      noteResident(region_.topBytes() - top);
      bytes_in_.add(bytes - old);
      region_taken_ += static_cast<std::int64_t>(bytes - old);
    }
    region_.markLive(p, bytes);
    return true;
  }

  /// Usable bytes of the live block p (a pointer into this heap's slice;
  /// any thread, as glibc trusts a block it is asked about), or 0 if no
  /// live block starts at p (or it is in the owner's cache: freed).
  std::size_t usableSize(const void *p) const {
    if (!region_.unitStart(p))
      return 0;
    const std::uint32_t t = region_.tag(p);
    return (t & (Region::kLive | Region::kCached)) == Region::kLive
               ? std::size_t{t & Region::kTagUnits} * kUnitBytes
               : 0;
  }

  /// Whether p is the start of a block of this heap's that was freed (on
  /// its way home or in its cache: a second free is a double free).
  bool freedAlready(const void *p) const {
    return region_.unitStart(p) && (region_.tag(p) & (Region::kLive | Region::kCached)) ==
                                       (Region::kLive | Region::kCached);
  }

  /// The owner frees p (a pointer into this heap's slice) into its cache,
  /// or, longer than any bin, into the region; false (nothing changed) if
  /// no live block starts at p.
  bool free(void *p) {
    const std::size_t bytes = usableSize(p);
    if (bytes == 0)
      return false;
    counted(bytes, false);
    cache(p, bytes);
    return true;
  }

  /// This heap's thread freed `bytes` of another heap's block (sent with
  /// freeRemote, which that heap does not count): counted here, as the
  /// classes count a free where it happens.
  void countFreeOfOther(std::size_t bytes) {
    frees_.add(1);
    bytes_out_.add(bytes);
  }

private:
  /// A freed block (counted) into the cache, or the region.
  void cache(void *p, std::size_t bytes) {
    const std::size_t units = bytes / kUnitBytes;
    if (units <= kMaxUnits || (units <= kDemandUnits && admitDemand(units))) {
      Bin &b = bins_[units];
      region_.setTag(p, Region::kLive | Region::kCached | static_cast<std::uint32_t>(units));
      *static_cast<void **>(p) = b.head;
      b.head = p;
      ++b.n;
      cached_ += units;
      if (units > kMaxUnits)
        demand_ += units;
      else if (__builtin_expect(cached_ - demand_ > kCacheUnits, 0))
        flushCache(b, b.n / 2 + 1); // (this bin's oldest half)
    } else {
      if (units <= kDemandUnits) // (a later request of its length raises the bin's cap)
        bins_[units].gave = 1;
      region_taken_ -= static_cast<std::int64_t>(bytes);
      // Longer than the cache keeps: to the region, reading the clock so
      // that free runs age by it (as the large heap's did at every give),
      // not only at sweeps: a thread that frees a big buffer and then
      // makes few calls still gives its memory back after DEFERO_DECAY_MS.
      now_ = os::now_ms();
      if (bytes >= release_from_ && g_decay_ms != ~std::uint32_t{0}) {
        region_.give(p, bytes, now_, true);
        release_from_ = bytes + bytes / 2;
        noteReleased();
      } else {
        giveRegion(p, bytes);
      }
      if (g_decay_ms != ~std::uint32_t{0})
        decay(now_, g_decay_ms, overCeiling());
    }
  }

public:

  /// Another thread frees p, a block of this heap's: marks it freed (an
  /// atomic or on its tag; false, nothing changed: it was not live, or was
  /// freed already), then freeRemote.
  bool markFreed(void *p) {
    if (!region_.unitStart(p))
      return false;
    const std::uint32_t t = region_.orTag(p, Region::kCached);
    return (t & (Region::kLive | Region::kCached)) == Region::kLive;
  }
  /// Sends p, a block of this heap's that another thread marked freed, to
  /// this heap (one CAS; counted by that thread, countFreeOfOther).
  void freeRemote(void *p) {
    void *old = remote_.load(std::memory_order_relaxed);
    do
      *static_cast<void **>(p) = old;
    while (!remote_.compare_exchange_weak(old, p, std::memory_order_release,
                                          std::memory_order_relaxed));
  }

  /// Frees every block other threads handed back (the owner, or anyone
  /// while the heap has no thread). `bad(p)`: one that names no live block.
  template <class Bad> void collect(Bad bad) {
    void *p = remote_.exchange(nullptr, std::memory_order_acquire);
    while (p) {
      void *next = *static_cast<void **>(p);
      const std::uint32_t t = region_.tag(p); // (marked freed: markFreed)
      if ((t & (Region::kLive | Region::kCached)) == (Region::kLive | Region::kCached))
        cache(p, std::size_t{t & Region::kTagUnits} * kUnitBytes); // (counted where freed)
      else
        bad(p);
      p = next;
    }
  }
  void collect() {
    // (A block on the list was marked freed by markFreed: only a write to a
    // freed block can unmark it.)
    collect([](void *p) { os::fatal_pointer("free", p, "block changed after it was freed"); });
  }

  /// Frees the blocks other threads handed back, if there are any (the
  /// owner, or anyone while the heap has no thread): called on the span
  /// heap's slow paths too (SpanHeap::decay), since a thread whose sizes
  /// moved to the classes takes nothing from here, and the blocks other
  /// threads freed for it stayed live, resident and out of reach:
  /// soak_phases on four threads held a tenth of its 16-128 KiB phase,
  /// 27 MB, through the next phases (each phase's survivors are freed by
  /// the next thread).
  void collectRemote() {
    if (__builtin_expect(remote_.load(std::memory_order_relaxed) != nullptr, 0))
      collect();
  }

  /// Gives back the memory of free runs free for g_decay_ms (`delay`),
  /// every one's with `all` (the owner).
  void decay(std::uint32_t now, std::uint32_t delay, bool all) {
    if (!region_.ready())
      return;
    region_.decay(now, delay, all);
    noteReleased();
  }

  /// Live bytes by this heap's counts (blocks taken less blocks freed
  /// here); any thread.
  std::int64_t liveBytes() const {
    return static_cast<std::int64_t>(bytes_in_.get() - bytes_out_.get());
  }
  std::uint64_t allocs() const { return allocs_.get(); }
  std::uint64_t liveBlocks() const { return allocs_.get() - frees_.get(); }
  std::uint64_t frees() const { return frees_.get(); }
  /// Bytes this heap took from its region (not its cache) since the
  /// caller last reset the count, less those of the blocks its owner freed
  /// straight back there (longer than the cache keeps), for publishing the
  /// live bytes: a thread that churns blocks of over 32 KiB does not
  /// publish at every fourth one (two threads' 64 KiB churn spent 10% of
  /// its time there, and their shared total's line went back and forth).
  std::int64_t regionTaken() const { return region_taken_; }
  void resetRegionTaken() { region_taken_ = 0; }
  std::int64_t releasedBytes() const { return released_.load(std::memory_order_relaxed); }

  /// Bytes of memory not resident before (never used, or given back) that
  /// takes took since the last call (the caller gives as much of its other
  /// free memory back).
  std::size_t takeGrown() {
    const std::size_t g = grown_;
    grown_ = 0;
    return g;
  }
  /// Whether the heap swept its cache (and read the clock) since the last
  /// call: the caller then runs its other pools' decay too, which a thread
  /// that makes only middle-sized blocks would not run otherwise.
  bool takeSwept() {
    const bool s = swept_;
    swept_ = false;
    return s;
  }
  std::uint32_t now() const { return now_; }
  /// Gives back the memory of the oldest resident free runs, at least
  /// `bytes` of it if there is that much (the owner: its spans grow).
  void releaseFree(std::size_t bytes) {
    if (!region_.ready())
      return;
    flushDemand();
    region_.releaseOldest(bytes);
    noteReleased();
  }

  /// The demand bins' blocks back to the region.
  void flushDemand() {
    if (demand_)
      for (std::size_t u = kMaxUnits + 1; u <= kDemandUnits; ++u)
        flushCache(bins_[u], bins_[u].n);
  }
  /// Every cached block back to the region (a thread exit, an orphan's
  /// sweep).
  void flushAll() {
    for (Bin &b : bins_)
      flushCache(b, b.n);
  }

private:
  /// A block of `bytes` from a free run of the region, after the cache's
  /// blocks have gone back to it if none held it (glibc's consolidation
  /// before its top grows: the cached blocks merge with their free
  /// neighbours, and the request may fit what they make); nullptr if the
  /// slice's top must grow even so. The cache fills again as blocks are
  /// freed; a program whose top does not grow never flushes it. cc1plus's
  /// trace 20.2 -> 19.1% fragmentation, g++'s processes 2 and 4 22.7 ->
  /// 21.7 and 20.2 -> 17.8, python3's 6.7 -> 7.9.
  void *consolidatedFit(std::size_t bytes) {
    if (void *p = region_.takeFit(bytes))
      return p;
    flushAll();
    return region_.takeFit(bytes);
  }

  /// The thread's last freed block of `units` units, or nullptr.
  void *takeCached(std::size_t units) {
    if (units > kDemandUnits)
      return nullptr;
    Bin &b = bins_[units];
    void *p = b.head;
    if (!p) {
      // A length past kMaxUnits asked for again after a block of it went
      // to the region for want of room in its bin: the bin keeps twice as
      // many from now on (up to kDemandCap).
      if (units > kMaxUnits && b.gave) {
        b.gave = 0;
        b.cap = static_cast<std::uint16_t>(b.cap == 0 ? 1 : b.cap * 2 > kDemandCap ? kDemandCap
                                                                                 : b.cap * 2);
      }
      return nullptr;
    }
    b.head = *static_cast<void **>(p);
    if (--b.n < b.low)
      b.low = b.n;
    cached_ -= units;
    if (units > kMaxUnits)
      demand_ -= units;
    region_.setTag(p, Region::kLive | static_cast<std::uint32_t>(units));
    counted(units * kUnitBytes, true);
    return p;
  }
  /// Accounts for block p of `bytes` just cut from the region.
  void tookFromRegion(void *p, std::size_t bytes, bool fresh) {
    region_.markLive(p, bytes);
    noteResident(fresh ? bytes : 0);
    counted(bytes, true);
    region_taken_ += static_cast<std::int64_t>(bytes);
  }

  /// A bin of the cache: freed blocks of one length, newest first.
  struct Bin {
    void *head = nullptr;
    std::uint32_t n = 0, low = 0; ///< blocks, and their fewest since the last sweep
    std::uint16_t cap = 0;  ///< past kMaxUnits: the most blocks it keeps
    std::uint16_t gave = 0; ///< past kMaxUnits: a block went to the region since the last miss
  };

  /// Counts a take (or a give) of `bytes`, and every
  /// kSweepEvery of them sweeps the cache: each bin gives the region three
  /// quarters of the blocks that stayed in it since the last sweep (its
  /// low-water mark; jemalloc's thread-cache GC), so blocks of a length the
  /// thread stopped asking for merge back within a few thousand calls.
  void counted(std::size_t bytes, bool take) {
    if (take) {
      allocs_.add(1);
      bytes_in_.add(bytes);
    } else {
      frees_.add(1);
      bytes_out_.add(bytes);
    }
    if (__builtin_expect(++calls_ == kSweepEvery, 0))
      sweep();
  }
  void sweep() {
    calls_ = 0;
    swept_ = true;
    now_ = os::now_ms();
    if (remote_.load(std::memory_order_relaxed))
      collect();
    for (Bin &b : bins_) {
      if (b.low) {
        b.cap /= 2; // (blocks sat unused all along: a demand bin keeps fewer)
        flushCache(b, b.low - b.low / 4);
      }
      b.low = b.n;
    }
    if (g_decay_ms != ~std::uint32_t{0})
      decay(now_, g_decay_ms, overCeiling());
  }
  /// Gives the region the oldest `k` blocks of bin b.
  void flushCache(Bin &b, std::uint32_t k) {
    if (k == 0 || b.n == 0)
      return;
    if (k > b.n)
      k = b.n;
    void **link = &b.head;
    for (std::uint32_t keep = b.n - k; keep; --keep)
      link = static_cast<void **>(*link);
    void *p = *link;
    *link = nullptr;
    b.n -= k;
    if (b.low > b.n)
      b.low = b.n;
    while (p) {
      void *next = *static_cast<void **>(p);
      const std::size_t bytes = std::size_t{region_.tag(p) & Region::kTagUnits} * kUnitBytes;
      cached_ -= bytes / kUnitBytes;
      if (bytes / kUnitBytes > kMaxUnits)
        demand_ -= bytes / kUnitBytes;
      giveRegion(p, bytes);
      p = next;
    }
  }
  /// Accounts for a take (or a grow) that moved the slice's top by
  /// `fresh` bytes, or cut memory that was given back to the OS.
  void noteResident(std::size_t fresh) {
    if (fresh) {
      g_mid_top.fetch_add(static_cast<std::int64_t>(fresh), std::memory_order_relaxed);
      // (The spans give back what the region's own free runs did not.)
      const std::size_t own = giveBackIdle(fresh);
      grown_ += own < fresh ? fresh - own : 0;
    } else if (const std::int64_t was = released_.load(std::memory_order_relaxed)) {
      // (perhaps cut from memory given back)
      const auto r = static_cast<std::int64_t>(region_.releasedBytes());
      if (r < was)
        grown_ += static_cast<std::size_t>(was - r);
      noteReleased();
    }
  }
  /// The slice's top grew by `bytes` (the region had no free run to cut
  /// them from): gives back the memory of the region's oldest resident
  /// free runs first, at least that much if it holds it, whatever their
  /// age (not under DEFERO_DECAY_MS=never); the bytes given back.
  std::size_t giveBackIdle(std::size_t bytes) {
    if (g_decay_ms == ~std::uint32_t{0})
      return 0;
    const std::size_t was = region_.releasedBytes();
    region_.releaseOldest(bytes);
    noteReleased();
    const std::size_t now = region_.releasedBytes();
    return now > was ? now - was : 0;
  }
  void giveRegion(void *p, std::size_t bytes) {
    region_.give(p, bytes, now_); // (a record per two units: never short)
  }

  bool attach() {
    if (failed_)
      return false;
    void *s = MidArena::get().claim(this);
    if (!s || !region_.adopt(s, static_cast<std::uint32_t>(MidArena::kSliceBytes / kUnitBytes))) {
      failed_ = true;
      return false;
    }
    now_ = os::now_ms();
    return true;
  }
  void noteReleased() {
    const auto r = static_cast<std::int64_t>(region_.releasedBytes());
    const std::int64_t was = released_.load(std::memory_order_relaxed);
    if (r != was) {
      g_mid_released.fetch_add(r - was, std::memory_order_relaxed);
      released_.store(r, std::memory_order_relaxed);
    }
  }

  /// The longest free run mallocHole cuts a class's block from: runs no
  /// longer than 4 KiB, which no middle-sized block (over 4 KiB) fits.
  static constexpr std::uint32_t kHoleUnits = 4096 / kUnitBytes;
  /// The first freed block this long or longer gives its memory back at
  /// once; after it, a block half again as long as the last that did
  /// (release_from_).
  static constexpr std::size_t kReleaseFrom = std::size_t{64} << 10;
  /// Blocks up to this many units are cached by length.
  static constexpr std::size_t kMaxUnits = (std::size_t{32} << 10) / kUnitBytes;
  /// The cache holds at most this many units of them (256 KiB).
  static constexpr std::size_t kCacheUnits = (std::size_t{256} << 10) / kUnitBytes;
  /// Blocks of kMaxUnits + 1 to kDemandUnits units (32-64 KiB) are cached
  /// by demand: a bin keeps at most its cap, which doubles (up to
  /// kDemandCap) each time the thread asks for the length again after a
  /// block of it went to the region for want of room, and halves at a
  /// sweep that finds blocks unused since the last; all of them together
  /// at most kDemandCacheUnits (1 MiB).
  static constexpr std::size_t kDemandUnits = (std::size_t{64} << 10) / kUnitBytes;
  static constexpr std::uint16_t kDemandCap = 16;
  static constexpr std::size_t kDemandCacheUnits = (std::size_t{1} << 20) / kUnitBytes;
  bool admitDemand(std::size_t units) const {
    return bins_[units].n < bins_[units].cap && demand_ + units <= kDemandCacheUnits;
  }
  static constexpr unsigned kSweepEvery = 4096;

public:
  const Region &debugRegion() const { return region_; }
  std::size_t debugCached() const { return std::size_t{cached_} * kUnitBytes; }
private:
  Region region_;
  std::size_t release_from_ = kReleaseFrom; ///< freed blocks this long go back at once
  Bin bins_[kDemandUnits + 1] = {};
  std::size_t cached_ = 0; ///< units in the cache
  std::size_t demand_ = 0; ///< of them, in bins past kMaxUnits
  unsigned calls_ = 0;
  OwnerCounter allocs_, frees_, bytes_in_, bytes_out_;
  std::int64_t region_taken_ = 0;
  std::size_t grown_ = 0;
  bool swept_ = false;
  std::atomic<std::int64_t> released_{0}; ///< (written by the owner, read by any)
  std::uint32_t now_ = 0;
  bool failed_ = false;
  alignas(64) std::atomic<void *> remote_{nullptr};
};

} // namespace defero::pages
