// fit_region.h - FitRegion: blocks of whole 4 KiB pages cut from one
// reserved address range by address-ordered best fit, with coalescing, and
// the memory of free runs given back to the OS after a delay.
//
// Johnstone and Wilson (1998) measured best fit and address-ordered first
// fit at about 1% fragmentation on real programs' traces, far below
// segregated storage: a freed block merges with the free runs on either
// side at once, and a request takes the smallest run that holds it (the
// lowest-addressed of equal ones), splitting off its low end. Used for
// the blocks too large for the size classes and not so large that a
// mapping of their own is cheaper (LargeHeap): a program whose large
// buffers change size reuses the memory of the old ones instead of
// keeping a cache of mappings of every size it ever freed.
//
// Bookkeeping lives out of band, so a free run's pages can be given back
// (madvise) and a write to a freed block corrupts nothing: a record per
// free run (first page, length, the bin list it is on, the queue of runs
// whose memory is still resident), and two page-indexed tag tables naming
// the run that starts and the run that ends at each page (boundary tags,
// Knuth's, out of the blocks). Bins: one per length up to 64 pages, four
// per doubling above, with a bitmap of the non-empty ones; a search scans
// at most kScan runs of a bin. All tables are reserved sparse (NORESERVE)
// and committed as they are touched.
//
// Memory return: a run freed (or grown by a merge) is stamped and joins a
// queue; decay(now) gives back the memory of the runs that have been free
// for `delay` ms (all of them with `all`), oldest first. A run keeps a
// count of its pages that are back with the OS; a merge adds them up and
// a block cut from a run takes its share (in proportion, rounded down: a
// run does not know which of its pages those are), so releasedBytes() is
// exact for runs given back whole and an estimate within one run's pages
// otherwise.
//
// Guarantees: blocks are page-aligned, whole pages, inside the region; a
// block cut from pages never handed out before is zero-filled (`fresh`).
// Not thread-safe: the caller (LargeHeap) holds a lock. If the region
// cannot be reserved (ulimit -v, valgrind), take() returns nullptr and the
// caller maps blocks directly.
#pragma once

#include <cstddef>
#include <cstdint>

#include "defero/platform/os.h"

namespace defero {

class FitRegion {
public:
  static constexpr std::size_t kPageBytes = 4096;
  /// Pages the region spans at most (32 GiB); less if that cannot be
  /// reserved (halved down to kMinPages).
  static constexpr std::uint32_t kMaxPages = std::uint32_t{1} << 23;
  static constexpr std::uint32_t kMinPages = std::uint32_t{1} << 16; // 256 MiB
  /// Runs of a bin a search looks at before it takes the best seen.
  static constexpr unsigned kScan = 32;

  constexpr FitRegion() = default;
  FitRegion(const FitRegion &) = delete;
  FitRegion &operator=(const FitRegion &) = delete;

  /// A block of `bytes` (a multiple of kPageBytes, > 0), or nullptr (the
  /// region is full or cannot be reserved). `fresh`: zero-filled.
  void *take(std::size_t bytes, bool &fresh) {
    if (!ready_ && !reserve())
      return nullptr;
    const std::size_t want = bytes / kPageBytes;
    if (want == 0 || want > pages_)
      return nullptr;
    const auto n = static_cast<std::uint32_t>(want);
    if (std::uint32_t r = findFit(n)) {
      const std::uint32_t first = runs_[r].first;
      cutLow(r, n);
      fresh = false;
      return address(first);
    }
    if (n > pages_ - top_)
      return nullptr;
    const std::uint32_t first = top_;
    top_ += n;
    fresh = true;
    return address(first);
  }

  /// Gives back a block take() returned (bytes as given to take), merging
  /// it with the free runs beside it; its memory stays resident until
  /// decay. False (nothing changed) when no record is left for the run.
  bool give(void *p, std::size_t bytes, std::uint32_t now) {
    std::uint32_t first = pageOf(p);
    std::uint32_t n = static_cast<std::uint32_t>(bytes / kPageBytes);
    std::uint32_t released = 0;
    // The runs that end just below it and start just above it.
    const std::uint32_t below = first ? tail_[first - 1] : 0;
    const std::uint32_t above = first + n < top_ ? head_[first + n] : 0;
    std::uint32_t r = below ? below : above;
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
    run.stamp = now;
    run.dirty = true;
    setTags(r);
    bin(r);
    queueFront(r);
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
    const std::uint32_t r = head_[end];
    if (!r || runs_[r].pages < more)
      return false;
    cutLow(r, more);
    return true;
  }

  /// Gives the memory of the runs free for at least `delay` ms back to the
  /// OS (every run's with `all`), oldest first.
  void decay(std::uint32_t now, std::uint32_t delay, bool all) {
    while (std::uint32_t r = qtail_) {
      Run &run = runs_[r];
      if (!all && now - run.stamp < delay)
        return;
      unqueue(r);
      os::discard(address(run.first), std::size_t{run.pages} * kPageBytes);
      released_pages_ += run.pages - run.released;
      run.released = run.pages;
    }
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
  static constexpr unsigned kExact = 64;
  static constexpr unsigned kBins = kExact + 4 * (23 - 6 + 1);
  static constexpr unsigned kBinWords = (kBins + 63) / 64;

  static unsigned binOf(std::uint32_t pages) {
    if (pages <= kExact)
      return pages - 1;
    const unsigned lg = 31u - static_cast<unsigned>(__builtin_clz(pages));
    return kExact + (lg - 6) * 4 + ((pages >> (lg - 2)) & 3u);
  }

  bool reserve() {
    if (failed_)
      return false;
    for (std::uint32_t pages = kMaxPages; pages >= kMinPages; pages /= 2) {
      void *b = os::map_sparse(std::size_t{pages} * kPageBytes);
      if (!b)
        continue;
      // Records: at most one free run per two pages, plus one.
      auto *runs = static_cast<Run *>(os::map_sparse(std::size_t{pages / 2 + 2} * sizeof(Run)));
      auto *head = static_cast<std::uint32_t *>(os::map_sparse(std::size_t{pages} * 4));
      auto *tail = static_cast<std::uint32_t *>(os::map_sparse(std::size_t{pages} * 4));
      if (!runs || !head || !tail) {
        os::unmap(b, std::size_t{pages} * kPageBytes);
        if (runs)
          os::unmap(runs, std::size_t{pages / 2 + 2} * sizeof(Run));
        if (head)
          os::unmap(head, std::size_t{pages} * 4);
        if (tail)
          os::unmap(tail, std::size_t{pages} * 4);
        continue;
      }
      base_ = reinterpret_cast<std::uintptr_t>(b);
      runs_ = runs;
      head_ = head;
      tail_ = tail;
      records_ = pages / 2 + 2;
      pages_ = pages;
      ready_ = true;
      return true;
    }
    failed_ = true;
    return false;
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
    std::uint32_t best = bestIn(bins_[b], n);
    if (best)
      return best;
    for (unsigned w = (b + 1) / 64, from = (b + 1) % 64; w < kBinWords; ++w, from = 0) {
      const std::uint64_t bits = nonempty_[w] & (~std::uint64_t{0} << from);
      if (bits)
        return bestIn(bins_[w * 64 + static_cast<unsigned>(__builtin_ctzll(bits))], n);
    }
    return 0;
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
    head_[runs_[r].first] = r;
    tail_[runs_[r].first + runs_[r].pages - 1] = r;
  }
  void clearTags(std::uint32_t r) {
    head_[runs_[r].first] = 0;
    tail_[runs_[r].first + runs_[r].pages - 1] = 0;
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
  std::uint32_t *head_ = nullptr, *tail_ = nullptr;
  std::uint32_t records_ = 0, used_records_ = 0, free_records_ = 0;
  std::uint32_t bins_[kBins] = {};
  std::uint64_t nonempty_[kBinWords] = {};
  std::uint32_t qhead_ = 0, qtail_ = 0; // resident free runs, newest first
  std::uint32_t released_pages_ = 0, free_pages_ = 0;
  bool ready_ = false, failed_ = false;
};

} // namespace defero
