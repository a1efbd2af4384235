// fit_region.h - BasicFitRegion: blocks of whole units (4 KiB pages for
// the large heap's FitRegion, 256 bytes for a thread's MidRegion) cut from
// one address range by address-ordered best fit, with coalescing, and the
// memory of free runs given back to the OS after a delay.
//
// Johnstone and Wilson (1998) measured best fit and address-ordered first
// fit at about 1% fragmentation on real programs' traces, far below
// segregated storage: a freed block merges with the free runs on either
// side at once, and a request takes the smallest run that holds it (the
// lowest-addressed of equal ones), splitting off its low end. Used for
// the blocks too large for the size classes and not so large that a
// mapping of their own is cheaper (LargeHeap): a program whose large
// buffers change size reuses the memory of the old ones instead of
// keeping a cache of mappings of every size it ever freed; and, at a
// 256-byte unit in a range of its own per thread (mid_heap.h), for the
// blocks of 1-32 KiB, whose size classes each kept their own high-water
// mark.
//
// Bookkeeping lives out of band, so a free run's pages can be given back
// (madvise) and a write to a freed block corrupts nothing: a record per
// free run (first unit, length, the bin list it is on, the queue of runs
// whose memory is still resident), and one unit-indexed tag table
// (boundary tags, Knuth's, out of the blocks): a free run's record index
// at its first unit and at its last (one unit: both), a live-marked
// block's length at its first (markLive/liveUnits: the length, and a bit
// no record index has), 0 everywhere else. A unit is a run's or a block's,
// never both, so the tag just below a block names the run that ends there
// if one does, and the tag just above it the run that starts there: one
// table does what a start table and an end table did, in half the memory
// (cc1plus's trace: 192 KiB of tags resident at its peak for 7.3 MB of
// middle-sized blocks, 2% of its live bytes; now half). Bins: one per
// length up to ExactBins units, four per doubling above, with a bitmap of
// the non-empty ones; a search scans at most kScan runs of a bin. All tables are
// reserved sparse (NORESERVE) and committed as they are touched: with
// 256-byte units, at most 4 bytes of tags per 256 where runs begin and
// end.
//
// Memory return: a run freed is stamped and joins a queue (a block that
// merges into a longer resident run takes that run's age and place);
// decay(now) gives back the memory of the runs that have been free for
// `delay` ms (all of them with `all`), oldest first: the OS pages the
// run covers whole (units smaller than a page: its partly covered pages at
// either end stay, shared with live blocks). A run keeps a count of its
// units that are back with the OS; a merge adds them up and a block cut
// from a run takes its share (in proportion, rounded down: a run does not
// know which of its units those are), so releasedBytes() is exact for
// page-sized units and runs given back whole, an estimate within one
// run's units otherwise.
//
// Guarantees: blocks are unit-aligned, whole units, inside the region; a
// block cut from units never handed out before is zero-filled (`fresh`).
// Not thread-safe: the caller (LargeHeap) holds a lock, or only one thread
// calls it (MidHeap). If the region cannot be reserved (ulimit -v,
// valgrind), take() returns nullptr and the caller serves blocks
// otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

#include "defero/platform/os.h"

namespace defero {

/// UnitBytes: the block granule (a power of two, at least 16); ExactBins:
/// run lengths up to this many units have a bin each (a power of two);
/// LowestOfEqual: a request that an exact bin serves takes the lowest-
/// addressed run of the first kScan there (else the bin's newest run: one
/// record read instead of up to kScan, for regions whose takes are
/// frequent).
template <std::size_t UnitBytes, unsigned ExactBins, bool LowestOfEqual = true>
class BasicFitRegion {
public:
  /// The unit ("page") of the region.
  static constexpr std::size_t kPageBytes = UnitBytes;
  /// Units the region spans at most when it reserves its own range (32 GiB
  /// of 4 KiB pages); less if that cannot be reserved (halved down to
  /// kMinPages).
  static constexpr std::uint32_t kMaxPages = std::uint32_t{1} << 23;
  static constexpr std::uint32_t kMinPages = std::uint32_t{1} << 16; // 256 MiB of pages
  /// Runs of a bin a search looks at before it takes the best seen.
  static constexpr unsigned kScan = 32;
  static_assert(UnitBytes >= 16 && (UnitBytes & (UnitBytes - 1)) == 0);
  static_assert(ExactBins >= 4 && (ExactBins & (ExactBins - 1)) == 0);

  constexpr BasicFitRegion() = default;
  BasicFitRegion(const BasicFitRegion &) = delete;
  BasicFitRegion &operator=(const BasicFitRegion &) = delete;

  /// Serves blocks from [base, base + units * kPageBytes), a range the
  /// caller reserved (unit-aligned, at most kMaxPages units), instead of
  /// reserving its own; false (nothing changed) if its tables cannot be
  /// mapped or the region is in use already.
  bool adopt(void *base, std::uint32_t units) {
    if (ready_ || failed_ || units == 0 || units > kMaxPages)
      return false;
    return tables(reinterpret_cast<std::uintptr_t>(base), units);
  }
  bool ready() const { return ready_; }

  /// Marks the block at p (bytes, as just returned by take) live: its
  /// length in units is kept in its start tag for liveUnits.
  void markLive(const void *p, std::size_t bytes) {
    putTag(pageOf(p), kLive | static_cast<std::uint32_t>(bytes / kPageBytes));
  }
  /// The start tag of the block at p (a unit start in the region): with
  /// kLive, a live-marked block's length in units (tagMask) and the
  /// caller's kCached bit; without, a free run or nothing.
  std::uint32_t tag(const void *p) const { return getTag(pageOf(p)); }
  void setTag(const void *p, std::uint32_t t) { putTag(pageOf(p), t); }
  /// Sets `bits` in the start tag of the block at p atomically (any
  /// thread, for a block its owner does not touch meanwhile); the tag
  /// before.
  std::uint32_t orTag(const void *p, std::uint32_t bits) {
    return __atomic_fetch_or(&tags_[pageOf(p)], bits, __ATOMIC_RELAXED);
  }
  /// The length in units of the live-marked block that starts at p (a
  /// unit start in the region), or 0 if no live-marked block starts there.
  std::uint32_t liveUnits(const void *p) const {
    const std::uint32_t t = getTag(pageOf(p));
    return t & kLive ? t & kTagUnits : 0;
  }
  /// Tag bits: a live block's start, a bit its owner may use (a cached
  /// block), and the length.
  static constexpr std::uint32_t kLive = std::uint32_t{1} << 31;
  static constexpr std::uint32_t kCached = std::uint32_t{1} << 30;
  static constexpr std::uint32_t kTagUnits = kCached - 1;
  /// Whether p is the start of a unit of the region (any thread: what
  /// it reads is set once, when the region is reserved or adopted).
  bool unitStart(const void *p) const {
    const std::uintptr_t off = reinterpret_cast<std::uintptr_t>(p) - base_;
    return off < std::uintptr_t{pages_} * kPageBytes && off % kPageBytes == 0;
  }

  /// A block of `bytes` (a multiple of kPageBytes, > 0), or nullptr (the
  /// region is full or cannot be reserved). `fresh`: zero-filled.
  void *take(std::size_t bytes, bool &fresh) {
    if (!ready_ && !reserve())
      return nullptr;
    fresh = false;
    if (void *p = takeFit(bytes))
      return p;
    const std::size_t want = bytes / kPageBytes;
    if (want == 0 || want > pages_ - top_)
      return nullptr;
    const std::uint32_t first = top_;
    top_ += static_cast<std::uint32_t>(want);
    fresh = true;
    return address(first);
  }
  /// A block of `bytes` (a multiple of kPageBytes, > 0) cut from a free
  /// run by best fit, never from the untouched top; nullptr if no run
  /// holds it, or the best-fitting one is longer than `longest` units (or
  /// the region is not in use).
  void *takeFit(std::size_t bytes, std::uint32_t longest = ~std::uint32_t{0}) {
    const std::size_t want = bytes / kPageBytes;
    if (!ready_ || want == 0 || want > pages_)
      return nullptr;
    const std::uint32_t r = findFit(static_cast<std::uint32_t>(want));
    if (!r || runs_[r].pages > longest)
      return nullptr;
    const std::uint32_t first = runs_[r].first;
    cutLow(r, static_cast<std::uint32_t>(want));
    return address(first);
  }

  /// Gives back a block take() returned (bytes as given to take), merging
  /// it with the free runs beside it; its memory stays resident until
  /// decay, or with `discard` the OS pages it covers whole go back at
  /// once. False (nothing changed) when no record is left for the run.
  bool give(void *p, std::size_t bytes, std::uint32_t now, bool discard = false) {
    std::uint32_t first = pageOf(p);
    std::uint32_t n = static_cast<std::uint32_t>(bytes / kPageBytes);
    std::uint32_t released = 0;
    if (discard) {
      released = discardWhole(first, n);
      released_pages_ += released;
    }
    putTag(first, 0); // (its live mark, if any)
    // The runs that end just below it and start just above it.
    const std::uint32_t below = first ? runAt(first - 1) : 0;
    const std::uint32_t above = first + n < top_ ? runAt(first + n) : 0;
    // A resident neighbour longer than the block keeps its age and its
    // place on the queue (the block joins it): a long free run that blocks
    // keep joining at its edge still goes back when it is due.
    std::uint32_t keep = 0;
    for (std::uint32_t m : {below, above})
      if (m && runs_[m].dirty && runs_[m].pages > n && (!keep || runs_[m].pages > runs_[keep].pages))
        keep = m;
    std::uint32_t r = keep ? keep : below ? below : above;
    if (!r) {
      r = newRecord();
      if (!r)
        return false;
    }
    for (std::uint32_t m : {below, above}) {
      if (!m)
        continue;
      Run &run = runs_[m];
      unbin(m);
      if (m != keep)
        unqueue(m);
      clearTags(m);
      if (run.first < first)
        first = run.first;
      n += run.pages;
      released += run.released;
      if (m != r)
        freeRecord(m);
    }
    Run &run = runs_[r];
    run.first = first;
    run.pages = n;
    run.released = released;
    setTags(r);
    bin(r);
    if (!keep && !(discard && released >= coveredUnits(first, n))) { // (resident memory to age)
      run.stamp = now;
      queueFront(r);
    }
    return true;
  }

  /// Grows the block at p (old bytes) to `bytes` in place if the free run
  /// just above it holds the difference, or it is the highest block and
  /// the region has the pages; false (nothing changed) if not.
  bool growInPlace(void *p, std::size_t old, std::size_t bytes) {
    const std::uint32_t end = pageOf(p) + static_cast<std::uint32_t>(old / kPageBytes);
    if ((bytes - old) / kPageBytes > pages_)
      return false;
    const auto more = static_cast<std::uint32_t>((bytes - old) / kPageBytes);
    if (end == top_) {
      if (more > pages_ - top_)
        return false;
      top_ += more;
      return true;
    }
    const std::uint32_t r = runAt(end);
    if (!r || runs_[r].pages < more)
      return false;
    cutLow(r, more);
    return true;
  }

  /// Gives the memory of the runs free for at least `delay` ms back to the
  /// OS (every run's with `all`), oldest first.
  void decay(std::uint32_t now, std::uint32_t delay, bool all,
             std::uint32_t most = ~std::uint32_t{0}) {
    for (; most; --most) {
      const std::uint32_t r = qtail_;
      if (!r)
        return;
      Run &run = runs_[r];
      if (!all && now - run.stamp < delay)
        return;
      unqueue(r);
      if constexpr (kPageBytes >= os::kPageBytes) {
        os::discard(address(run.first), std::size_t{run.pages} * kPageBytes);
        released_pages_ += run.pages - run.released;
        run.released = run.pages;
      } else { // the OS pages it covers whole
        const std::uint32_t units = discardWhole(run.first, run.pages);
        if (units > run.released) {
          released_pages_ += units - run.released;
          run.released = units;
        }
      }
    }
  }

  /// Units of [first, first + n) that lie in the OS pages it covers whole.
  std::uint32_t coveredUnits(std::uint32_t first, std::uint32_t n) const {
    if constexpr (kPageBytes >= os::kPageBytes)
      return n;
    const auto lo = reinterpret_cast<std::uintptr_t>(address(first));
    const std::uintptr_t hi = lo + std::uintptr_t{n} * kPageBytes;
    const std::uintptr_t a = (lo + os::kPageBytes - 1) & ~(os::kPageBytes - 1);
    const std::uintptr_t b = hi & ~(os::kPageBytes - 1);
    return static_cast<std::uint32_t>(b > a ? (b - a) / kPageBytes : 0);
  }
  /// Gives back the OS pages [first, first + n) covers whole; their units.
  std::uint32_t discardWhole(std::uint32_t first, std::uint32_t n) {
    const std::uint32_t units = coveredUnits(first, n);
    if (units) {
      const auto lo = reinterpret_cast<std::uintptr_t>(address(first));
      const std::uintptr_t a = (lo + os::kPageBytes - 1) & ~(os::kPageBytes - 1);
      os::discard(reinterpret_cast<void *>(a), std::size_t{units} * kPageBytes);
    }
    return units;
  }

  /// Gives back the memory of the oldest resident free runs until at least
  /// `bytes` of it is back (or none is left resident).
  void releaseOldest(std::size_t bytes) {
    const std::size_t goal = releasedBytes() + bytes;
    while (qtail_ && releasedBytes() < goal)
      decay(0, 0, true, 1);
  }

  /// Whether a free run's memory is resident, and then when the oldest
  /// such run was freed (ms).
  bool oldestResident(std::uint32_t &stamp) const {
    if (!qtail_)
      return false;
    stamp = runs_[qtail_].stamp;
    return true;
  }

  bool contains(const void *p) const {
    return reinterpret_cast<std::uintptr_t>(p) - base_ < std::uintptr_t{pages_} * kPageBytes;
  }
  /// Bytes of the region ever handed out (its high-water mark).
  std::size_t topBytes() const { return std::size_t{top_} * kPageBytes; }
  /// Bytes of free runs whose memory is back with the OS.
  std::size_t releasedBytes() const { return std::size_t{released_pages_} * kPageBytes; }
  /// Bytes in free runs (resident or not).
  std::size_t freeBytes() const { return std::size_t{free_pages_} * kPageBytes; }

private:
  struct Run {
    std::uint32_t first, pages;
    std::uint32_t next, prev;   ///< its bin's list (or, next: the free records)
    std::uint32_t qnext, qprev; ///< the queue of resident runs, newest first
    std::uint32_t stamp;        ///< when it was last freed or merged (ms)
    std::uint32_t released;     ///< its pages back with the OS
    std::uint8_t binned = 0, dirty = 0;
  };
  static constexpr unsigned kExact = ExactBins;
  static constexpr unsigned kLgExact = static_cast<unsigned>(__builtin_ctz(ExactBins));
  // Lengths above kExact: four bins per doubling up to 2^31 units.
  static constexpr unsigned kBins = kExact + 4 * (31 - kLgExact + 1);
  static constexpr unsigned kBinWords = (kBins + 63) / 64;

  static unsigned binOf(std::uint32_t pages) {
    if (pages <= kExact)
      return pages - 1;
    const unsigned lg = 31u - static_cast<unsigned>(__builtin_clz(pages));
    return kExact + (lg - kLgExact) * 4 + ((pages >> (lg - 2)) & 3u);
  }
  // Tags are read and written as relaxed atomics (plain moves on x86-64):
  // another thread may mark a live block freed (orTag) or read its length
  // (liveUnits) while the owner writes the tag beside it.
  std::uint32_t getTag(std::uint32_t u) const { return __atomic_load_n(&tags_[u], __ATOMIC_RELAXED); }
  void putTag(std::uint32_t u, std::uint32_t t) { __atomic_store_n(&tags_[u], t, __ATOMIC_RELAXED); }
  /// The free run whose first or last unit is u (0: none, or a live
  /// block's start): the caller knows which end it asks about.
  std::uint32_t runAt(std::uint32_t u) const {
    const std::uint32_t t = getTag(u);
    return t & kLive ? 0 : t;
  }

  bool reserve() {
    if (failed_)
      return false;
    for (std::uint32_t pages = kMaxPages; pages >= kMinPages; pages /= 2) {
      void *b = os::map_sparse(std::size_t{pages} * kPageBytes);
      if (!b)
        continue;
      if (tables(reinterpret_cast<std::uintptr_t>(b), pages))
        return true;
      os::unmap(b, std::size_t{pages} * kPageBytes);
    }
    failed_ = true;
    return false;
  }
  /// Maps the tables for a region of `pages` units at base.
  bool tables(std::uintptr_t base, std::uint32_t pages) {
    // Records: at most one free run per two units, plus one.
    auto *runs = static_cast<Run *>(os::map_sparse(std::size_t{pages / 2 + 2} * sizeof(Run)));
    auto *tags = static_cast<std::uint32_t *>(os::map_sparse(std::size_t{pages} * 4));
    if (!runs || !tags) {
      if (runs)
        os::unmap(runs, std::size_t{pages / 2 + 2} * sizeof(Run));
      if (tags)
        os::unmap(tags, std::size_t{pages} * 4);
      return false;
    }
    base_ = base;
    runs_ = runs;
    tags_ = tags;
    records_ = pages / 2 + 2;
    pages_ = pages;
    ready_ = true;
    return true;
  }

  void *address(std::uint32_t page) const {
    return reinterpret_cast<void *>(base_ + std::uintptr_t{page} * kPageBytes);
  }
  std::uint32_t pageOf(const void *p) const {
    return static_cast<std::uint32_t>((reinterpret_cast<std::uintptr_t>(p) - base_) / kPageBytes);
  }

  /// The best-fitting run of at least n pages (0: none): in n's bin the
  /// smallest that holds n, else in the next non-empty bin the smallest;
  /// the lowest-addressed of equals.
  std::uint32_t findFit(std::uint32_t n) const {
    unsigned b = binOf(n);
    std::uint32_t best = inBin(b, n);
    if (best)
      return best;
    for (unsigned w = (b + 1) / 64, from = (b + 1) % 64; w < kBinWords; ++w, from = 0) {
      const std::uint64_t bits = nonempty_[w] & (~std::uint64_t{0} << from);
      if (bits)
        return inBin(w * 64 + static_cast<unsigned>(__builtin_ctzll(bits)), n);
    }
    return 0;
  }
  std::uint32_t inBin(unsigned b, std::uint32_t n) const {
    if constexpr (!LowestOfEqual)
      if (b < kExact) // (every run there is b + 1 >= n units long)
        return bins_[b];
    return bestIn(bins_[b], n);
  }
  std::uint32_t bestIn(std::uint32_t r, std::uint32_t n) const {
    std::uint32_t best = 0;
    for (unsigned k = 0; r && k < kScan; ++k, r = runs_[r].next) {
      const Run &run = runs_[r];
      if (run.pages < n)
        continue;
      if (!best || run.pages < runs_[best].pages ||
          (run.pages == runs_[best].pages && run.first < runs_[best].first))
        best = r;
    }
    return best;
  }

  /// Takes the low n pages of free run r for a block: the rest (if any)
  /// stays a free run under the same record, in its place on the resident
  /// queue (it keeps its age); the block takes its share of the run's
  /// released pages.
  void cutLow(std::uint32_t r, std::uint32_t n) {
    Run &run = runs_[r];
    unbin(r);
    clearTags(r);
    const std::uint32_t rest = run.pages - n;
    const std::uint32_t rest_released =
        static_cast<std::uint32_t>(std::uint64_t{run.released} * rest / run.pages);
    released_pages_ -= run.released - rest_released;
    if (rest == 0) {
      unqueue(r);
      freeRecord(r);
      return;
    }
    run.first += n;
    run.pages = rest;
    run.released = rest_released;
    setTags(r);
    bin(r);
  }

  void bin(std::uint32_t r) {
    Run &run = runs_[r];
    const unsigned b = binOf(run.pages);
    run.prev = 0;
    run.next = bins_[b];
    if (bins_[b])
      runs_[bins_[b]].prev = r;
    bins_[b] = r;
    nonempty_[b / 64] |= std::uint64_t{1} << (b % 64);
    run.binned = 1;
    free_pages_ += run.pages;
  }
  void unbin(std::uint32_t r) {
    Run &run = runs_[r];
    if (!run.binned)
      return;
    const unsigned b = binOf(run.pages);
    (run.prev ? runs_[run.prev].next : bins_[b]) = run.next;
    if (run.next)
      runs_[run.next].prev = run.prev;
    if (!bins_[b])
      nonempty_[b / 64] &= ~(std::uint64_t{1} << (b % 64));
    run.binned = 0;
    free_pages_ -= run.pages;
  }

  void queueFront(std::uint32_t r) {
    Run &run = runs_[r];
    run.dirty = 1;
    run.qprev = 0;
    run.qnext = qhead_;
    (qhead_ ? runs_[qhead_].qprev : qtail_) = r;
    qhead_ = r;
  }
  void unqueue(std::uint32_t r) {
    Run &run = runs_[r];
    if (!run.dirty)
      return;
    (run.qprev ? runs_[run.qprev].qnext : qhead_) = run.qnext;
    (run.qnext ? runs_[run.qnext].qprev : qtail_) = run.qprev;
    run.dirty = 0;
  }

  void setTags(std::uint32_t r) {
    putTag(runs_[r].first, r);
    putTag(runs_[r].first + runs_[r].pages - 1, r);
  }
  void clearTags(std::uint32_t r) {
    putTag(runs_[r].first, 0);
    putTag(runs_[r].first + runs_[r].pages - 1, 0);
  }

  std::uint32_t newRecord() {
    if (std::uint32_t r = free_records_) {
      free_records_ = runs_[r].next;
      runs_[r] = Run{};
      return r;
    }
    if (used_records_ + 1 >= records_)
      return 0;
    return ++used_records_; // (record 0 is "none")
  }
  void freeRecord(std::uint32_t r) {
    runs_[r].binned = runs_[r].dirty = 0;
    runs_[r].next = free_records_;
    free_records_ = r;
  }

  std::uintptr_t base_ = 0;
  std::uint32_t pages_ = 0, top_ = 0;
  Run *runs_ = nullptr;
  std::uint32_t *tags_ = nullptr; ///< per unit: see the tag table above
  std::uint32_t records_ = 0, used_records_ = 0, free_records_ = 0;
  std::uint32_t bins_[kBins] = {};
  std::uint64_t nonempty_[kBinWords] = {};
  std::uint32_t qhead_ = 0, qtail_ = 0; // resident free runs, newest first
  std::uint32_t released_pages_ = 0, free_pages_ = 0;
  bool ready_ = false, failed_ = false;
};

/// The large heap's region: 4 KiB pages, a bin per length up to 64 pages.
using FitRegion = BasicFitRegion<4096, 64>;

} // namespace defero
