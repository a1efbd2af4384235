// span_arena.h - SpanArena: the top heap of the K-Bit heap. Reserves one
// contiguous address window and hands it out as span-aligned runs (bump
// allocation, never returned), with a metadata record per span page.
//
// Why one window: the K-Bit partition classifies a chunk by the high bits of
// its offset in the window, so every chunk must have an offset in it.
//
// Guarantees:
//  - malloc(n) returns a kSpanBytes-aligned (in absolute addresses) run of round_up(n, kSpanBytes)
//    zero-filled bytes, or nullptr when the window is exhausted.
//  - Address space is reserved lazily on the first malloc; the window is
//    committed in kCommitStep steps as the bump pointer passes them. If the
//    full window cannot be reserved (ulimit -v, valgrind), the largest
//    power of two down to kMinWindowBytes that can be is used instead;
//    windowBytes() tells which.
//  - The window from offset HugeFrom on (never, by default) is advised for
//    transparent huge pages as it is committed: a big heap then costs one
//    TLB entry per 2 MiB instead of per 4 KiB, and a small one (below
//    HugeFrom) keeps its 4 KiB pages, so its resident memory is what it
//    touches. giveBack() gives pages back to the OS; a 2 MiB range past
//    HugeFrom that gives pages back is advised against huge pages first
//    (once, and for good): with THP's default khugepaged settings
//    (max_ptes_none 511) the kernel would collapse it into a huge page
//    again within seconds, faulting every page given back in.
//  - Huge pages wait for the program to have run HugeAfterMs since the
//    window's first commit (0 by default: at once). A huge page's first
//    fault zeroes 2 MiB at once, and where the host backs a guest's memory
//    lazily (this project's VM) a cold one costs 7.7 ms against 21.6-25 ms
//    for 32 MiB of 4 KiB pages: a program that ends within the wait (a
//    compile of 0.4 s) never pays it. The first commit past the wait, or
//    noteTime() from the layer above's slow paths, advises what was
//    committed before (but the ranges that gave pages back) as well, and
//    noteTime() collapses it into huge pages (MADV_COLLAPSE), 16 MiB a
//    call; new memory faults in huge pages from then on.
//  - page(p) is the metadata record of the span page holding p; records
//    start zeroed and belong to the layer above (this layer never reads
//    them). bits(p) is a 512-byte zeroed bitmap per span page, likewise.
//  - Thread-safe (the bump pointer is under a spin lock); constant-
//    initialisable, so it works before static constructors run.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "defero/heaplayers/heap_layer.h"
#include "defero/heaplayers/threads/spin_lock.h"
#include "defero/platform/os.h"

namespace defero {

/// Per-span-page metadata, owned by the layer above the arena. Four bytes,
/// read and written whole (loadPage/storePage) so a reader racing a heap
/// that is carving the span sees the old record or the new one, never a mix.
struct alignas(4) SpanPage {
  std::uint8_t size_class_plus1; ///< 0: not a chunk span
  std::uint8_t heap_id;          ///< which heap carved this span
  std::uint16_t pages_from_start; ///< distance to the span's first page
};
static_assert(sizeof(SpanPage) == 4);

inline SpanPage loadPage(const SpanPage &page) {
  return std::atomic_ref<SpanPage>(const_cast<SpanPage &>(page))
      .load(std::memory_order_relaxed);
}
inline void storePage(SpanPage &page, SpanPage value) {
  std::atomic_ref<SpanPage>(page).store(value, std::memory_order_release);
}

template <std::size_t WindowBytes = (std::size_t{1} << 36),
          std::size_t SpanBytes = 65536, std::size_t HugeFrom = WindowBytes,
          std::uint32_t HugeAfterMs = 0>
class SpanArena {
  static_assert((WindowBytes & (WindowBytes - 1)) == 0, "window: power of 2");
  static_assert((SpanBytes & (SpanBytes - 1)) == 0, "span: power of 2");
  static_assert(SpanBytes >= os::kPageBytes && WindowBytes > SpanBytes);

public:
  static constexpr std::size_t kWindowBytes = WindowBytes;
  static constexpr std::size_t kSpanBytes = SpanBytes;
  static constexpr std::size_t kPages = WindowBytes / SpanBytes;
  static constexpr std::size_t kBitmapBytesPerPage = 512;
  static constexpr std::size_t kCommitStep = std::size_t{2} << 20;
  /// The window starts at a multiple of this (spans are then aligned to
  /// their size in absolute addresses; 2 MiB also suits huge pages).
  static constexpr std::size_t kBaseAlign =
      SpanBytes > kCommitStep ? SpanBytes : kCommitStep;
  static_assert(HugeFrom >= WindowBytes || HugeFrom % kCommitStep == 0,
                "huge pages start on a commit step");
  static constexpr std::size_t kMinWindowBytes =
      WindowBytes < (std::size_t{256} << 20) ? WindowBytes
                                             : (std::size_t{256} << 20);

  constexpr SpanArena() = default;

  void *malloc(std::size_t sz) {
    if (sz == 0 || sz > WindowBytes)
      return nullptr; // (also keeps the round-up below from overflowing)
    const std::size_t bytes = (sz + SpanBytes - 1) & ~(SpanBytes - 1);
    std::lock_guard<SpinLock> guard(lock_);
    return mallocLocked(bytes);
  }

  /// Opens the window's huge pages once HugeAfterMs have passed since its
  /// first commit (`now`: os::now_ms()), if no commit has opened them
  /// yet, and then collapses what was committed before, kCollapseStep
  /// bytes a call (collapseEarlier) until it is all done. The layer above
  /// calls it on a slow path that holds no lock (a range collapsed takes
  /// up to a cold huge page's fault: 7.7 ms on this project's VM), so that
  /// a program that stops growing before the wait ends gets them too. A
  /// load when done.
  void noteTime(std::uint32_t now) {
    if constexpr (kHugeRanges != 0 && HugeAfterMs != 0) {
      if (__builtin_expect(huge_.load(std::memory_order_relaxed) == kHugeDone, 1))
        return;
      const std::uint32_t first = first_ms_.load(std::memory_order_relaxed);
      if (first == kNotCommitted || now - first < HugeAfterMs)
        return;
      std::size_t from, to;
      {
        std::lock_guard<SpinLock> guard(lock_);
        (void)hugeOpenLocked(now);
        if (huge_.load(std::memory_order_relaxed) != kHugeCollapse)
          return;
        from = collapse_next_;
        to = collapse_to_ - from > kCollapseStep ? from + kCollapseStep : collapse_to_;
        collapse_next_ = to;
        if (to == collapse_to_)
          huge_.store(kHugeDone, std::memory_order_relaxed);
      }
      collapseEarlier(from, to);
    }
  }
  /// Whether the window past HugeFrom is advised for huge pages yet.
  bool hugeOpen() const { return huge_.load(std::memory_order_relaxed) != kHugeClosed; }

  /// Spans are never given back to the arena; the layer above recycles them.
  void free(void *) {}

  /// Gives the pages of [p, p + bytes), handed out before, back to the OS
  /// (madvise: they read back as zero, and fault in again when touched).
  /// Past HugeFrom, each 2 MiB range (kCommitStep) the pages lie in is first
  /// advised against huge pages, the first time only: khugepaged collapses
  /// a huge-page range that has a single resident page of its 512 by
  /// default, which would fault back in all the range's pages given back
  /// (soak_phases on one thread: 7 collapses in a run, up to 14 MB faulted
  /// back in, its phases' peaks 15 MB apart from run to run).
  /// Such a range keeps 4 KiB pages from then on (giving part of a huge
  /// page back splits it anyway). Any thread; a system call a range at
  /// most once, one atomic RMW a range given back.
  void giveBack(void *p, std::size_t bytes) {
    if constexpr (kHugeRanges != 0) {
      const std::uintptr_t b = base_atomic_.load(std::memory_order_acquire);
      const std::uintptr_t off = reinterpret_cast<std::uintptr_t>(p) - b;
      if (bytes != 0 && off + bytes > HugeFrom && off < WindowBytes) {
        const std::size_t first = (off > HugeFrom ? off - HugeFrom : 0) / kCommitStep;
        const std::size_t last = (off + bytes - 1 - HugeFrom) / kCommitStep;
        for (std::size_t r = first; r <= last && r < kHugeRanges; ++r) {
          const std::uint64_t bit = std::uint64_t{1} << (r % 64);
          std::atomic<std::uint64_t> &w = no_huge_[r / 64];
          if (!(w.load(std::memory_order_relaxed) & bit) &&
              !(w.fetch_or(bit, std::memory_order_relaxed) & bit))
            os::adviseNoHuge(reinterpret_cast<void *>(b + HugeFrom + r * kCommitStep),
                             kCommitStep);
        }
      }
    }
    os::discard(p, bytes);
  }

  bool owns(const void *p) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t b = base_atomic_.load(std::memory_order_acquire);
    return b != 0 && a - b < used_atomic_.load(std::memory_order_relaxed);
  }

  /// Start of the window (0 before the first malloc).
  std::uintptr_t base() const {
    return base_atomic_.load(std::memory_order_acquire);
  }
  /// Bytes of address space reserved (0 before the first malloc).
  std::size_t windowBytes() const { return window_; }
  /// Bytes of the window handed out so far (the heap's footprint).
  std::size_t usedBytes() const {
    return used_atomic_.load(std::memory_order_relaxed);
  }

  SpanPage &page(const void *p) { return pages_[pageIndex(p)]; }
  SpanPage &pageAt(std::size_t index) { return pages_[index]; }
  std::size_t pageIndex(const void *p) const {
    return (reinterpret_cast<std::uintptr_t>(p) - base_) / SpanBytes;
  }
  void *pageStart(std::size_t index) const {
    return reinterpret_cast<void *>(base_ + index * SpanBytes);
  }
  std::uint64_t *bits(std::size_t index) {
    return reinterpret_cast<std::uint64_t *>(bitmaps_ +
                                             index * kBitmapBytesPerPage);
  }

  void lockArena() { lock_.lock(); }
  void unlockArena() { lock_.unlock(); }

private:
  bool reserveLocked() {
    if (base_ != 0)
      return true;
    for (std::size_t w = WindowBytes; w >= kMinWindowBytes; w /= 2) {
      const std::size_t pages = w / SpanBytes;
      void *win = reserveAligned(w);
      void *meta = win ? os::map_sparse(pages * sizeof(SpanPage)) : nullptr;
      void *bits = meta ? os::map_sparse(pages * kBitmapBytesPerPage) : nullptr;
      if (bits) {
        pages_ = static_cast<SpanPage *>(meta);
        bitmaps_ = static_cast<unsigned char *>(bits);
        window_ = w;
        base_ = reinterpret_cast<std::uintptr_t>(win);
        base_atomic_.store(base_, std::memory_order_release);
        return true;
      }
      if (win)
        os::unmap(win, w);
      if (meta)
        os::unmap(meta, pages * sizeof(SpanPage));
    }
    return false;
  }

  /// Reserves w bytes aligned to kBaseAlign, so spans (and power-of-two
  /// chunks inside them) are aligned in absolute addresses, not only
  /// relative to the window.
  static void *reserveAligned(std::size_t w) {
    char *raw = static_cast<char *>(os::reserve(w + kBaseAlign));
    if (!raw)
      return nullptr;
    const auto a = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (a + kBaseAlign - 1) & ~(kBaseAlign - 1);
    char *base = reinterpret_cast<char *>(aligned);
    if (base > raw)
      os::unmap(raw, static_cast<std::size_t>(base - raw));
    const std::size_t tail = kBaseAlign - static_cast<std::size_t>(base - raw);
    if (tail)
      os::unmap(base + w, tail);
    return base;
  }

  void *mallocLocked(std::size_t bytes) {
    if (!reserveLocked())
      return nullptr;
    if (bytes > window_ - used_)
      return nullptr;
    const std::size_t start = used_;
    if (start + bytes > committed_) {
      std::size_t want = (start + bytes + kCommitStep - 1) & ~(kCommitStep - 1);
      if (want > window_)
        want = window_;
      if (!os::commit(reinterpret_cast<char *>(base_) + committed_,
                      want - committed_))
        return nullptr;
      if (committed_ == 0)
        first_ms_.store(os::now_ms(), std::memory_order_relaxed);
      if (want > HugeFrom && hugeOpenLocked(os::now_ms()))
        adviseHugeLocked(committed_, want);
      committed_ = want;
    }
    used_ = start + bytes;
    used_atomic_.store(used_, std::memory_order_relaxed);
    return reinterpret_cast<void *>(base_ + start);
  }

  SpinLock lock_;
  std::uintptr_t base_ = 0;
  std::size_t window_ = 0;
  std::size_t used_ = 0;
  std::size_t committed_ = 0;
  SpanPage *pages_ = nullptr;
  unsigned char *bitmaps_ = nullptr;
  std::atomic<std::uintptr_t> base_atomic_{0};
  std::atomic<std::size_t> used_atomic_{0};
  /// The 2 MiB ranges past HugeFrom, and per range whether giveBack has
  /// advised it against huge pages (bit r % 64 of word r / 64).
  static constexpr std::size_t kHugeRanges =
      HugeFrom < WindowBytes ? (WindowBytes - HugeFrom) / kCommitStep : 0;
  std::atomic<std::uint64_t> no_huge_[kHugeRanges / 64 + 1] = {};
  static constexpr std::uint32_t kNotCommitted = ~std::uint32_t{0};
  /// What noteTime collapses of what was committed before the wait ended,
  /// at most, a call (8 huge pages).
  static constexpr std::size_t kCollapseStep = std::size_t{16} << 20;
  /// os::now_ms() at the first commit (kNotCommitted before it).
  std::atomic<std::uint32_t> first_ms_{kNotCommitted};
  /// Whether the window past HugeFrom is advised as it is committed: not
  /// yet (closed), yes with what was committed before still to collapse
  /// from collapse_next_ up to collapse_to_ (noteTime), or yes.
  enum : std::uint8_t { kHugeClosed, kHugeCollapse, kHugeDone };
  std::atomic<std::uint8_t> huge_{HugeAfterMs == 0 ? kHugeDone : kHugeClosed};
  std::size_t collapse_next_ = 0, collapse_to_ = 0;

  /// Whether commits past HugeFrom are advised for huge pages now; opens
  /// them once HugeAfterMs have passed since the first commit, advising
  /// what is committed past HugeFrom (to be collapsed by noteTime).
  /// Under lock_.
  bool hugeOpenLocked(std::uint32_t now) {
    if (huge_.load(std::memory_order_relaxed) != kHugeClosed)
      return true;
    const std::uint32_t first = first_ms_.load(std::memory_order_relaxed);
    if (first == kNotCommitted || now - first < HugeAfterMs)
      return false;
    adviseHugeLocked(HugeFrom, committed_);
    collapse_next_ = HugeFrom;
    collapse_to_ = committed_;
    huge_.store(committed_ > HugeFrom ? kHugeCollapse : kHugeDone, std::memory_order_relaxed);
    return true;
  }

  /// Whether the 2 MiB range r past HugeFrom gave pages back (and was
  /// advised against huge pages: giveBack).
  bool gaveBack(std::size_t r) const {
    return r < kHugeRanges &&
           ((no_huge_[r / 64].load(std::memory_order_relaxed) >> (r % 64)) & 1) != 0;
  }

  /// Collapses the window's resident pages in [from, to) (past HugeFrom)
  /// into huge pages now, but the ranges that gave pages back (no_huge_),
  /// one 2 MiB range a call so that a range given back meanwhile is seen.
  /// Without lock_.
  void collapseEarlier(std::size_t from, std::size_t to) {
    if constexpr (kHugeRanges != 0) {
      for (; from < to; from += kCommitStep) {
        if (gaveBack((from - HugeFrom) / kCommitStep))
          continue;
        const std::size_t n = to - from < kCommitStep ? to - from : kCommitStep;
        os::collapseHuge(reinterpret_cast<char *>(base_) + from, n);
      }
    }
  }

  /// Advises [from, to) of the window past HugeFrom for huge pages, but
  /// the 2 MiB ranges that gave pages back (no_huge_). Under lock_.
  void adviseHugeLocked(std::size_t from, std::size_t to) {
    if constexpr (kHugeRanges != 0) {
      if (from < HugeFrom)
        from = HugeFrom;
      while (from < to) {
        const std::size_t r = (from - HugeFrom) / kCommitStep;
        std::size_t end = HugeFrom + (r + 1) * kCommitStep;
        if (end > to)
          end = to;
        if (!gaveBack(r))
          os::adviseHuge(reinterpret_cast<char *>(base_) + from, end - from);
        from = end;
      }
    }
  }
};

static_assert(HeapLayer<SpanArena<>> && OwningHeapLayer<SpanArena<>>);

} // namespace defero
