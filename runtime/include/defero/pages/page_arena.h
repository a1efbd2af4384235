// page_arena.h - PageArena: the small-object window of the process heap,
// its page map (pointer -> span metadata in two loads) and the metadata
// pool every per-thread heap draws from.
//
// The window is a SpanArena (one reserved address range, 64 KiB pages,
// committed as the bump pointer passes): the K-Bit partition classifies a
// block by its offset in it. For each 64 KiB page the map holds the
// SlotPage of the span covering it, or null; it is written once, when the
// span is carved (release), and read by any thread without a lock
// (acquire), so free() finds a block's span with no lock: two loads, a
// subtraction and a shift.
//
// A span's first slot lies a colour above its start (0 to 7 times 128
// bytes, Bonwick's slab colouring: colourBytes), so that the first lines of
// spans, where fresh spans' blocks, runs and cells begin, spread over the
// cache sets instead of all falling in the sets of a 64 KiB boundary.
//
// Carving a span and taking metadata are the slow path (a spin lock each;
// once per 64 KiB of new memory). The window's address space is never given
// back, only the pages of spans (giveBack, called by the heaps that own
// them); an empty span can be made over for another size class (remake).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>

#include "defero/heaplayers/threads/spin_lock.h"
#include "defero/heaplayers/top/span_arena.h"
#include "defero/kbit/size_classes.h"
#include "defero/pages/slot_page.h"
#include "defero/platform/os.h"

namespace defero::pages {

/// Out-of-line storage for metadata (span headers, path tables, heaps):
/// carved from 1 MiB mappings, never mixed with user blocks, never freed.
class MetaPool {
public:
  /// `bytes` of zeroed memory aligned to `align` (<= 4096), or nullptr.
  void *get(std::size_t bytes, std::size_t align) {
    std::lock_guard<SpinLock> guard(lock_);
    std::uintptr_t at = (next_ + align - 1) & ~(align - 1);
    if (at + bytes > end_) {
      const std::size_t chunk = bytes > kChunk ? (bytes + 4095) & ~std::size_t{4095} : kChunk;
      void *m = os::map(chunk);
      if (!m)
        return nullptr;
      next_ = reinterpret_cast<std::uintptr_t>(m);
      end_ = next_ + chunk;
      at = next_;
    }
    next_ = at + bytes;
    return reinterpret_cast<void *>(at);
  }
  void lock() { lock_.lock(); }
  void unlock() { lock_.unlock(); }

private:
  static constexpr std::size_t kChunk = std::size_t{1} << 20;
  SpinLock lock_;
  std::uintptr_t next_ = 0, end_ = 0;
};

class PageArena {
public:
  // 64 GiB of address space for small objects (reserved, not committed);
  // past its first kHugeFrom bytes it asks for transparent huge pages.
  static constexpr std::size_t kHugeFrom = std::size_t{32} << 20;
  // A program's huge pages wait for it to have run kHugeAfterMs (see
  // SpanArena): mini_compiler's 13 cold huge-page faults cost it 0.01-0.14
  // s of system time in a 0.4 s run.
  static constexpr std::uint32_t kHugeAfterMs = 1000;
  using Window = SpanArena<std::size_t{1} << 36, 65536, kHugeFrom, kHugeAfterMs>;
  static constexpr std::size_t kPageBytes = Window::kSpanBytes;
  static constexpr unsigned kPageShift = 16;
  static_assert(std::size_t{1} << kPageShift == kPageBytes);
  /// The window starts on a multiple of 2^kBaseAlignShift bytes.
  static constexpr unsigned kBaseAlignShift = 21;
  static_assert(std::size_t{1} << kBaseAlignShift == Window::kBaseAlign);

  /// The one instance (constant-initialised: usable before constructors).
  static PageArena &get() {
    static constinit PageArena instance;
    return instance;
  }

  /// The span covering p, or nullptr (outside the window or not carved).
  /// Lock-free: any thread, any time.
  __attribute__((always_inline)) SlotPage *spanOf(const void *p) const {
    SlotPage *pg;
    if (!carvedPage(p, pg) || pg == &kLostPage)
      return nullptr;
    return pg;
  }
  /// Whether p lies in the carved part of the window, and then its page's
  /// span in pg: never null there (free's fast path tests no null), but
  /// kLostPage, which no heap owns, for a page lost to a failed carve.
  __attribute__((always_inline)) bool carvedPage(const void *p, SlotPage *&pg) const {
    const std::uintptr_t off = reinterpret_cast<std::uintptr_t>(p) - peek(base_);
    if (off >= peek(limit_))
      return false;
    pg = std::atomic_ref<SlotPage *>(map_[off >> kPageShift]).load(std::memory_order_acquire);
    return true;
  }

  /// Carves a fresh span for size class cls owned by `owner`: every slot
  /// free, the page map pointing at its header. nullptr when the window or
  /// the metadata is exhausted.
  SlotPage *carve(unsigned cls, SpanHeap *owner) {
    std::lock_guard<SpinLock> guard(carve_lock_);
    const std::size_t bytes = kbit::spanBytesFor(kbit::kClassBytes[cls], kPageBytes);
    void *hdr = meta_.get(sizeof(SlotPage), alignof(SlotPage));
    if (!hdr)
      return nullptr;
    auto *s = static_cast<char *>(window_.malloc(bytes));
    if (!s)
      return nullptr; // (the header is lost: the window is full anyway)
    if (!map_ && !mapInit())
      return nullptr;
    auto *pg = new (hdr) SlotPage();
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(s);
    pg->start = base + colourBytes(cls, base);
    pg->slot_bytes = kbit::kClassBytes[cls];
    pg->slots = (bytes - colourBytes(cls, base)) / kbit::kClassBytes[cls];
    pg->cls = static_cast<std::uint8_t>(cls);
    pg->cache_off = static_cast<std::uint16_t>(cls * kClassCacheBytes);
    pg->inverse = inverseOf(kbit::kClassBytes[cls]);
    static_assert((1u << kbit::kMaxOffsetBits) <= (1u << kMaxOffsetBits));
    pg->owner = owner;
    pg->initFree();
    pg->cells = false;
    const std::size_t first = (base - window_.base()) >> kPageShift;
    // Pages a failed carve took from the window (its map could not be
    // mapped) lie below this span: they name kLostPage, so that every page
    // below limit_ names a span.
    for (std::size_t i = limit_ >> kPageShift; i < first; ++i)
      std::atomic_ref<SlotPage *>(map_[i]).store(const_cast<SlotPage *>(&kLostPage),
                                                 std::memory_order_release);
    for (std::size_t i = 0; i < bytes / kPageBytes; ++i)
      std::atomic_ref<SlotPage *>(map_[first + i]).store(pg, std::memory_order_release);
    __atomic_store_n(&limit_, (first << kPageShift) + bytes, __ATOMIC_RELEASE);
    return pg;
  }

  /// The first address of pg's span (its slot 0 lies colourBytes above).
  static std::uintptr_t spanBase(const SlotPage *pg) {
    return pg->start & ~(std::uintptr_t{kPageBytes} - 1);
  }

  /// Slab colouring (Bonwick): slot 0 of a span of class cls at `base`
  /// lies this many bytes above it, 0 to 7 times 128 by the span's place in
  /// the window, so that the spans' first slots, where a fresh span's
  /// blocks and runs begin, do not all share the same cache sets. Classes
  /// whose size has a power-of-two factor above 128 keep 0: their slots
  /// serve aligned requests of that alignment (alignedClassOf).
  static constexpr unsigned kColours = 8, kColourStep = 128;
  static unsigned colourBytes(unsigned cls, std::uintptr_t base) {
    const std::uint32_t size = kbit::kClassBytes[cls];
    if ((size & (0u - size)) > kColourStep)
      return 0;
    return static_cast<unsigned>((base >> kPageShift) % kColours) * kColourStep;
  }

  /// Bytes of a span of class cls (64 KiB for classes up to 8 KiB).
  static std::size_t spanBytes(unsigned cls) {
    return kbit::spanBytesFor(kbit::kClassBytes[cls], kPageBytes);
  }

  /// Makes pg, an empty span, over for class cls, whose spans are as long
  /// (spanBytes): every slot free, no word cached, not placed. Its owner
  /// only, with no block of it live or on a free stack or remote list, so
  /// no other thread reads its header meanwhile (the page map is
  /// unchanged: it names the same header).
  static void remake(SlotPage *pg, unsigned cls) {
    const std::size_t bytes = spanBytes(cls);
    const std::uintptr_t base = spanBase(pg);
    pg->start = base + colourBytes(cls, base);
    pg->slot_bytes = kbit::kClassBytes[cls];
    pg->slots = (bytes - colourBytes(cls, base)) / kbit::kClassBytes[cls];
    pg->cls = static_cast<std::uint8_t>(cls);
    pg->cache_off = static_cast<std::uint16_t>(cls * kClassCacheBytes);
    pg->inverse = inverseOf(kbit::kClassBytes[cls]);
    __atomic_store_n(&pg->placed_owner, nullptr, __ATOMIC_RELAXED);
    pg->used = 0;
    pg->cached_word = kNoWord;
    pg->word_cursor = 0;
    pg->run_cursor = 0;
    pg->run_top = 0;
    for (auto &w : pg->free)
      w = 0;
    pg->initFree();
    pg->cells = false;
    pg->no_gang_m = 0; // (another slot size: its runs are other runs)
  }

  /// Metadata memory (zeroed) for the heaps built on this arena.
  void *meta(std::size_t bytes, std::size_t align) { return meta_.get(bytes, align); }

  std::uintptr_t base() const { return __atomic_load_n(&base_, __ATOMIC_RELAXED); }
  bool inWindow(const void *p) const {
    return reinterpret_cast<std::uintptr_t>(p) - base() <
           __atomic_load_n(&limit_, __ATOMIC_RELAXED);
  }
  /// Bytes of the window's carved part, from base(): it stays readable
  /// (memory given back is discarded, never unmapped), and only grows.
  std::size_t carvedBytes() const { return __atomic_load_n(&limit_, __ATOMIC_RELAXED); }
  /// Bytes of the window handed out as spans (the small heap's footprint).
  std::size_t usedBytes() const { return window_.usedBytes(); }
  /// Gives the pages of [p, p + bytes) of carved spans back to the OS
  /// (SpanArena::giveBack: past kHugeFrom, their 2 MiB ranges are advised
  /// against huge pages first, so that khugepaged does not fault them in).
  void giveBack(void *p, std::size_t bytes) { window_.giveBack(p, bytes); }
  /// Opens the window's huge pages once they are due (SpanArena::noteTime).
  void noteTime(std::uint32_t now) { window_.noteTime(now); }

  /// Held across fork(): a child never inherits a half-carved span.
  void lockAll() {
    carve_lock_.lock();
    meta_.lock();
    window_.lockArena();
  }
  void unlockAll() {
    window_.unlockArena();
    meta_.unlock();
    carve_lock_.unlock();
  }

private:
  bool mapInit() {
    // Called with the window reserved (after its first malloc): the map
    // covers the whole window, committed only where spans are.
    const std::size_t pages = window_.windowBytes() / kPageBytes;
    map_ = static_cast<SlotPage **>(os::map_sparse(pages * sizeof(SlotPage *)));
    if (!map_)
      return false;
    __atomic_store_n(&base_, window_.base(), __ATOMIC_RELEASE);
    return true;
  }

  /// The span of pages lost to a failed carve: no owner, no slot.
  static constexpr SlotPage kLostPage{};

  SpinLock carve_lock_;
  Window window_;
  MetaPool meta_;
  SlotPage **map_ = nullptr;
  // base_ - limit_ is the carved part of the window; before the first span
  // both are 0, so spanOf() of any pointer is nullptr.
  // Written with release stores; spanOf reads them plainly (peek) so that
  // free's range test is two instructions with memory operands: base_ is
  // written once, limit_ only grows, and a stale limit sends a block of a
  // span carved meanwhile to the slow path, which reads them again.
  std::uintptr_t base_ = 0;
  std::size_t limit_ = 0;
};

} // namespace defero::pages
