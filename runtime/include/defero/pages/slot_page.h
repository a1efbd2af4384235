// slot_page.h - SlotPage: the metadata of one span of equal slots, with a
// two-level free bitmap searched by tzcnt/lzcnt (the software twin of the
// OBS's Fast-Find).
//
// A span is a run of 64 KiB arena pages holding slots of one size class.
// Its metadata lives out of line (never among user blocks): the fields
// fixed once carved in the first cache line (every free reads them, other
// threads' too), the owner's in the second, then a bitmap with one bit per
// slot, 1 = free, and a summary word whose bit w says "word w has a free
// slot". Slots per
// span are at most 4096 (64 KiB of 16-byte slots), so 64 words and one
// summary word cover every class.
//
// Costs (x86-64, no loop for the common case):
//  - takeNextWord: the word cache's claim of a bitmap word's free slots,
//    from word_cursor on (the summary's tzcnt): about 12 instructions, once
//    per up to 64 unhinted mallocs. Slots go out lowest address first
//    (jemalloc's "set first unset"), so a fresh span fills in address order.
//    (takeLowest and release, one slot at a time, are the tests' model.)
//  - findBeside / findInCell: the placement beside an anchor (a funnel
//    shift of the two words around it, then a tzcnt / lzcnt); findNear
//    (i, R, up_first): the free slot nearest slot i within R slots,
//    one side first: a masked tzcnt upwards and a masked lzcnt downwards in
//    at most two words each. With R = ceil(128 / slot bytes) this is "the
//    same or the adjacent cache line" (Mesh's lowestSetBitAt /
//    highestSetBitBeforeOrAt).
//  - findInRange(lo, hi) / findInRangeDown: the lowest / highest free slot
//    in [lo, hi): one masked tzcnt / lzcnt per word of the range (a
//    container's run); findNearestInRange(lo, hi, t, stride): the free
//    slot nearest t among every stride-th from lo, the same scans from t
//    both ways (a tree zone's run: PlacementLayer::takeRunAt).
//
// Not thread-safe: only the span's owner touches the bitmap, `used` and the
// list links. Immutable once carved: start, owner. The class fields
// (slot_bytes, slots, cls, inverse, cache_off) change only when the span,
// with no slot in use, is made over for another class of the same span
// length by its owner (PageArena::remake): no block of it is live, on a
// free stack or on a remote list then, so no other thread reads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "defero/platform/os.h"

namespace defero::pages {

inline constexpr unsigned kWordBits = 64;
/// The bits [b, b + n) of a bitmap word (b + n <= kWordBits, n >= 1).
constexpr std::uint64_t wordBits(std::uint64_t b, std::uint64_t n) {
  return (n == kWordBits ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1) << b;
}
inline constexpr unsigned kMaxWords = 64;
inline constexpr unsigned kMaxSlots = kWordBits * kMaxWords;
inline constexpr unsigned kNoSlot = ~0u;
/// Bits at the multiples of 2^k in a bitmap word, k = 0..6 (the lowest
/// bit of each lane of 2^k bits).
inline constexpr std::uint64_t kGroupStarts[7] = {
    ~std::uint64_t{0},     0x5555555555555555u, 0x1111111111111111u, 0x0101010101010101u,
    0x0001000100010001u, 0x0000000100000001u, 0x0000000000000001u};
/// Bytes of a heap's per-class word cache and free stack (one line).
inline constexpr unsigned kClassCacheBytes = 64;
inline constexpr std::uint8_t kNoWord = 0xFF;
/// Offsets within a span stay below 2^kMaxOffsetBits (spans <= 256 KiB).
inline constexpr unsigned kMaxOffsetBits = 18;
/// ceil(2^64 / d) for a slot size d > 1 (SlotPage::inverse).
constexpr std::uint64_t inverseOf(std::uint64_t d) { return ~std::uint64_t{0} / d + 1; }
/// Set bits of x: the popcnt instruction where the build may use it, else
/// the SWAR sum inline (about 12 instructions; libgcc's __popcountdi2 is a
/// call and twice that).
inline unsigned popcount64(std::uint64_t x) {
#if defined(__POPCNT__)
  return static_cast<unsigned>(__builtin_popcountll(x));
#else
  x -= (x >> 1) & 0x5555555555555555ull;
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
  return static_cast<unsigned>((x * 0x0101010101010101ull) >> 56);
#endif
}
/// A plain read of a word other threads write with __atomic_store_n, which
/// the compiler may fold into an instruction's memory operand (an atomic
/// load is a load of its own); an atomic load under ThreadSanitizer, which
/// cannot see that it is benign (an aligned word is read whole on every
/// target here).
template <class T> __attribute__((always_inline)) inline T peek(const T &v) {
#if defined(__SANITIZE_THREAD__)
  return __atomic_load_n(&v, __ATOMIC_ACQUIRE);
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  return __atomic_load_n(&v, __ATOMIC_ACQUIRE);
#else
  return v;
#endif
#else
  return v;
#endif
}

/// The 64x64->128 bit product (GCC's and Clang's extension).
__extension__ typedef unsigned __int128 Wide;

class SpanHeap;

/// Where a span is in its owner's bookkeeping.
enum class SpanState : std::uint8_t {
  Current, ///< the owner's page for unhinted allocation of its class
  Avail,   ///< on the owner's list of spans with room
  Full,    ///< no free slot, on no list (a free puts it back on Avail)
  Run,     ///< the owner's run span: cut into runs for containers
  Empty,   ///< no slot in use, on the owner's list of empty spans
};

struct alignas(64) SlotPage {
  // --- first line: what every free reads, fixed while a block of the span
  // lives (so another thread's free reads it without pulling the owner's
  // writes over) ---
  std::uintptr_t start = 0;    ///< address of slot 0
  std::uint64_t inverse = 0;   ///< ceil(2^64 / slot_bytes): see slotAt
  SpanHeap *owner = nullptr;   ///< the heap that carved it (never changes)
  std::uint64_t slots = 0;     ///< slots in the span (<= kMaxSlots; a full
                               ///< word: free compares it from memory)
  std::uint32_t slot_bytes = 0;
  std::uint8_t cls = 0;        ///< size class
  /// cls * kClassCacheBytes: the offset of the class's word cache and free
  /// stack in a heap's table of them (free's fast path: one load).
  std::uint16_t cache_off = 0;
  /// The owner, set (once, by the owner) when a hint placed a block here;
  /// null before. The owner's frees of a placed span's blocks go back to
  /// its bitmap, where the placement searches see them, not onto a free
  /// stack (WordCacheLayer): free's fast path tests this first, in one
  /// compare (the hinted pair's free), then, for a span not placed, the
  /// owner (only the owner stacks a block).
  SpanHeap *placed_owner = nullptr;
  bool wasPlaced() const { return __atomic_load_n(&placed_owner, __ATOMIC_RELAXED) != nullptr; }
  /// Marks the span placed; true the first time.
  bool markPlaced() {
    if (wasPlaced()) // (a store only once: other threads' frees read this line)
      return false;
    __atomic_store_n(&placed_owner, owner, __ATOMIC_RELAXED);
    return true;
  }
  // --- second line: the owner's (written by its malloc and free) ---
  alignas(64) std::uint64_t summary = 0; ///< bit w: free[w] != 0
  std::uint16_t used = 0;      ///< slots handed out (owner only)
  SpanState state = SpanState::Full;
  /// The word whose free slots the owner's word cache holds (kNoWord:
  /// none); its bits read 0 here. A free sets its bit here as always (the
  /// cache checks that bit when it hands the slot out: WordCache).
  std::uint8_t cached_word = kNoWord;
  /// Where the next word claim starts looking (takeNextWord).
  std::uint8_t word_cursor = 0;
  /// Run spans: the slots not yet cut into runs, [run_cursor, run_top).
  /// Runs that grow up are cut from the bottom, runs that grow down from
  /// the top, so that a container's consecutive runs of one direction lie
  /// end to end (a walk in list order crosses from one to the next).
  std::uint16_t run_cursor = 0;
  std::uint16_t run_top = 0;
  /// SpanHeap::takeWithGroup found no free group of no_group_g slots here
  /// when `used` was no_group_used (g 0: never looked): it looks again
  /// only once used has fallen below that (a free made room).
  std::uint16_t no_group_used = 0;
  std::uint8_t no_group_g = 0;
  /// Words from this one up were never claimed by the word cache since the
  /// span was carved or made over: their memory, as far as the unhinted
  /// path goes, was never touched (takeNextWord, SpanHeap::preferTouched).
  std::uint8_t fresh_word = 0;
  SlotPage *next = nullptr;    ///< owner's Avail or Empty list
  SlotPage **pprev = nullptr;  ///< the link that points here on that list
  /// An Empty span whose memory is still resident: the owner's queue of
  /// them, newest first (SpanHeap::decay releases from the oldest end).
  SlotPage *qnext = nullptr, *qprev = nullptr;
  std::uint32_t empty_ms = 0;  ///< when it went Empty (os::now_ms)
  bool released = false;       ///< an Empty span whose memory went back to the OS
  bool queued = false;         ///< on that queue (qnext, qprev)
  /// Lists' cells were cut here (PlacementLayer::takeCell) since it was
  /// carved or last emptied: a list whose tail lies here began in a cell.
  bool cells = false;
  // --- the bitmap ---
  /// One bit per slot, and one word more that is always 0 (no slot): a
  /// search that reads the word after a slot's (the slot above the last,
  /// a window round a slot of the last word) needs no bound test.
  alignas(64) std::uint64_t free[kMaxWords + 1] = {};
  // --- after the bitmap (its last line's spare bytes) ---
  /// For a span of at most 16 OS pages: bit p, page p went back to the OS
  /// at a trim (SpanHeap::trimIdle) and was not seen in use since.
  std::uint16_t gone_pages = 0;
  /// `used` when trimIdle last looked here (0: never): it looks again only
  /// once a free has lowered it.
  std::uint16_t trim_used = 0;
  /// SpanHeap::gangMalloc found no run of no_gang_m free slots in one word
  /// here when `used` was no_gang_used (0: never looked): it looks again
  /// for as many only once used has fallen below that.
  std::uint16_t no_gang_used = 0;
  std::uint8_t no_gang_m = 0;
  /// The first slot of the lowest run of m (1..64) or more free slots
  /// within one bitmap word (first fit), or kNoSlot; `len`, if given, gets
  /// the run's length (SpanHeap::gangFromRun lays the next gangs in the
  /// rest of it). First fit, not best fit: with classes a thread has left
  /// retiring into the bitmaps (WordCacheLayer::retireIdle), cc1plus's
  /// trace 15.7% -> 10.5% fragmentation and g++'s second process 12.8 ->
  /// 7.4, in as many instructions (best fit had soak_phases on one thread
  /// at 108.7 MB against 111.1 with first fit, before retirement).
  /// `words`: the bitmap to search (free, or a copy with fewer bits set:
  /// residentFree). Cost: a few instructions a maximal run of free slots
  /// before the first that holds m.
  unsigned firstRun(unsigned m, const std::uint64_t *words = nullptr,
                    unsigned *len = nullptr) const {
    if (!words)
      words = free;
    for (std::uint64_t s = summary; s; s &= s - 1) {
      const unsigned w = static_cast<unsigned>(__builtin_ctzll(s));
      for (std::uint64_t f = words[w]; f;) {
        const unsigned lo = static_cast<unsigned>(__builtin_ctzll(f));
        const std::uint64_t up = ~(f >> lo); // (bit 0 clear: slot lo is free)
        const unsigned n = up ? static_cast<unsigned>(__builtin_ctzll(up)) : kWordBits - lo;
        if (n >= m) {
          if (len)
            *len = n;
          return w * kWordBits + lo;
        }
        f = lo + n >= kWordBits ? 0 : f & (~std::uint64_t{0} << (lo + n));
      }
    }
    return kNoSlot;
  }

  /// The bitmap's words into out (one per word of the span), less the
  /// slots that overlap a page that went back to the OS (gone_pages): the
  /// free slots whose memory is resident. `base`: the span's first byte.
  void residentFree(std::uintptr_t base, std::uint64_t *out) const {
    const unsigned words = (slots + kWordBits - 1) / kWordBits;
    for (unsigned w = 0; w < words; ++w)
      out[w] = free[w];
    for (std::uint32_t g = gone_pages; g; g &= g - 1) {
      std::uint64_t lo, hi;
      pageSlots(base, static_cast<unsigned>(__builtin_ctz(g)), lo, hi);
      while (lo < hi) { // a word's part of [lo, hi) at a time
        const std::uint64_t b = lo % kWordBits, n = hi - lo < kWordBits - b ? hi - lo : kWordBits - b;
        out[lo / kWordBits] &= ~wordBits(b, n);
        lo += n;
      }
    }
  }

  /// Marks every slot free (a fresh span, or one made over: no word
  /// claimed yet).
  void initFree() {
    fresh_word = 0;
    const unsigned full = slots / kWordBits, rest = slots % kWordBits;
    for (unsigned w = 0; w < full; ++w)
      free[w] = ~std::uint64_t{0};
    if (rest)
      free[full] = (std::uint64_t{1} << rest) - 1;
    const unsigned words = full + (rest ? 1 : 0);
    summary = words == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << words) - 1;
  }

  void *address(unsigned i) const {
    return reinterpret_cast<void *>(start + std::uintptr_t{i} * slot_bytes);
  }
  bool isFree(unsigned i) const { return (free[i / kWordBits] >> (i % kWordBits)) & 1; }
  bool hasRoom() const { return summary != 0; }
  /// The summary's bits of the words a claim took before (below
  /// fresh_word), and whether one of them has a free slot: room in memory
  /// the unhinted path touched (SpanHeap::preferTouched).
  std::uint64_t touchedWords() const {
    return fresh_word >= kWordBits ? ~std::uint64_t{0} : (std::uint64_t{1} << fresh_word) - 1;
  }
  bool touchedRoom() const { return (summary & touchedWords()) != 0; }
  /// Whether every slot of [lo, hi) is free in the bitmap.
  bool allFree(std::uint64_t lo, std::uint64_t hi) const {
    while (lo < hi) {
      const std::uint64_t b = lo % kWordBits, n = hi - lo < kWordBits - b ? hi - lo : kWordBits - b;
      const std::uint64_t mask = wordBits(b, n);
      if ((free[lo / kWordBits] & mask) != mask)
        return false;
      lo += n;
    }
    return true;
  }
  /// Bit p set: no slot that overlaps OS page p of the span (which begins
  /// at `base`) is in use, on a word cache or on a free stack (all of
  /// those read 0 in the bitmap), for p < `pages` (at most 16).
  std::uint32_t idlePages(std::uintptr_t base, unsigned pages) const {
    std::uint32_t m = 0;
    for (unsigned p = 0; p < pages; ++p) {
      std::uint64_t first, last;
      pageSlots(base, p, first, last);
      if (first >= last || allFree(first, last))
        m |= std::uint32_t{1} << p;
    }
    return m;
  }
  /// The slots [first, last) that overlap OS page p of the span (which
  /// begins at `base`); none (first >= last) if no slot does.
  void pageSlots(std::uintptr_t base, unsigned p, std::uint64_t &first,
                 std::uint64_t &last) const {
    const std::uint64_t off = start - base; // the span's colour
    const std::uint64_t lo = std::uint64_t{p} * os::kPageBytes, hi = lo + os::kPageBytes;
    first = last = 0;
    if (hi > off) {
      first = lo <= off ? 0 : (lo - off) / slot_bytes;
      last = (hi - 1 - off) / slot_bytes + 1;
      if (last > slots)
        last = slots;
    }
  }

  /// Takes slot i, which must be free (checked: a slot handed out twice
  /// would corrupt two blocks silently).
  void take(unsigned i) {
    const unsigned w = i / kWordBits;
    const std::uint64_t bit = std::uint64_t{1} << (i % kWordBits);
    if (__builtin_expect(!(free[w] & bit), 0))
      os::fatal_pointer("defero", address(i), "internal error: a slot taken twice");
    const std::uint64_t f = free[w] & ~bit;
    free[w] = f;
    if (!f)
      summary &= ~(std::uint64_t{1} << w);
    ++used;
  }

  /// Takes slot i, which a search of this span just found free.
  void takeFound(unsigned i) {
    const unsigned w = i / kWordBits;
    const std::uint64_t f = free[w] & ~(std::uint64_t{1} << (i % kWordBits));
    free[w] = f;
    if (!f)
      summary &= ~(std::uint64_t{1} << w);
    ++used;
  }

  /// Takes every free slot of the next word with one, from word_cursor
  /// round the span (the span must have room): returns the word's index,
  /// its free bits in `bits`. Round the span, not lowest first: a word
  /// claimed again as soon as one of its blocks is freed would give one
  /// slot per claim under random frees (churn: 1 claim per 7.7 mallocs
  /// lowest first); round the span, each word gathers a turn's frees.
  /// But never a word no claim took before (fresh_word and up) while a
  /// word below it has a free slot: that would touch new memory while
  /// touched memory lies free (address-ordered first fit's reason,
  /// Johnstone; cc1plus's trace 21.2 -> 20.8% fragmentation). A span's
  /// words are fresh only until one turn has claimed them all, so a
  /// churning span goes round as before.
  unsigned takeNextWord(std::uint64_t &bits) {
    const std::uint64_t s = summary;
    const std::uint64_t ahead = s & (~std::uint64_t{0} << word_cursor);
    unsigned w = static_cast<unsigned>(__builtin_ctzll(ahead ? ahead : s));
    if (w >= fresh_word) {
      const std::uint64_t touched = s & touchedWords();
      if (touched)
        w = static_cast<unsigned>(__builtin_ctzll(touched));
      else
        fresh_word = static_cast<std::uint8_t>(w + 1);
    }
    bits = free[w];
    free[w] = 0;
    summary = s & ~(std::uint64_t{1} << w);
    used = static_cast<std::uint16_t>(used + popcount64(bits));
    word_cursor = static_cast<std::uint8_t>((w + 1) & (kWordBits - 1));
    return w;
  }

  /// The lowest free slot, taken; kNoSlot if the span is full.
  __attribute__((always_inline)) unsigned takeLowest() {
    const std::uint64_t s = summary;
    if (!s)
      return kNoSlot;
    const unsigned w = static_cast<unsigned>(__builtin_ctzll(s));
    const std::uint64_t f = free[w];
    const unsigned b = static_cast<unsigned>(__builtin_ctzll(f));
    const std::uint64_t rest = f & (f - 1);
    free[w] = rest;
    if (!rest)
      summary = s & (s - 1);
    ++used;
    return w * kWordBits + b;
  }

  /// Frees slot i (which must be taken). True if the span was full.
  bool release(unsigned i) {
    const unsigned w = i / kWordBits;
    free[w] |= std::uint64_t{1} << (i % kWordBits);
    const bool was_full = summary == 0;
    summary |= std::uint64_t{1} << w;
    --used;
    return was_full;
  }

  /// Index of the slot starting at p, or kNoSlot if p is not a slot start
  /// of this span (inside a slot, or past the last). One 64x64->128
  /// multiply gives both the index and the exactness test: with inverse =
  /// (2^64 + e) / d (e < d), off * inverse = q * 2^64 + r * 2^64 / d +
  /// off * e / d for off = q * d + r, so the high half is q and the low
  /// half is below off < 2^kMaxOffsetBits exactly when r == 0 (else it is
  /// at least 2^64 / d >= 2^49).
  __attribute__((always_inline)) unsigned slotAt(const void *p) const {
    std::uint64_t i;
    return slotStart(p, i) ? static_cast<unsigned>(i) : kNoSlot;
  }
  /// slotAt for the fast path: whether p is a slot start, its index in i
  /// (a full register: no truncation on the way to the bitmap).
  __attribute__((always_inline)) bool slotStart(const void *p, std::uint64_t &i) const {
    const std::uintptr_t off = reinterpret_cast<std::uintptr_t>(p) - start;
    std::uint64_t low;
#if defined(__x86_64__)
    asm("mulq %3" : "=a"(low), "=d"(i) : "a"(off), "rm"(inverse) : "cc");
#else
    const Wide m = static_cast<Wide>(off) * inverse;
    i = static_cast<std::uint64_t>(m >> 64);
    low = static_cast<std::uint64_t>(m);
#endif
    return low < (std::uint64_t{1} << kMaxOffsetBits) && i < slots;
  }
  /// Index of the slot holding p, a pointer into the span's pages; `slots`
  /// (no slot) for one past the last slot or below the first (the span's
  /// colour: PageArena::colourBytes). A stale or bogus anchor may be
  /// either: the placement searches then look at the bitmap's last words,
  /// never past them.
  unsigned slotHolding(const void *p) const {
    const std::uint64_t i = slotIndex(p);
    return static_cast<unsigned>(i < slots ? i : slots);
  }
  /// slotHolding for a block this span handed out (no clamp needed).
  unsigned slotOfBlock(const void *p) const { return static_cast<unsigned>(slotIndex(p)); }

  /// (p - start) / slot_bytes by the inverse (one multiply); meaningless
  /// for p below start.
  std::uint64_t slotIndex(const void *p) const {
    const std::uintptr_t off = reinterpret_cast<std::uintptr_t>(p) - start;
    return static_cast<std::uint64_t>((static_cast<Wide>(off) * inverse) >> 64);
  }

  /// The lowest slot s in [lo, hi) such that the g slots from s are free
  /// and lie in [lo, hi) and in one bitmap word, s a multiple of g when g
  /// is a power of two (so that g slots of 128 / g bytes are two whole
  /// cache lines); kNoSlot if none (none taken). 1 <= g <= 64.
  ///
  /// A power of two g (a list's cell in the 16, 32 and 64-byte classes) is
  /// a lane of g bits, and a free group a lane of the word's complement
  /// that is zero: the lowest such lane flagged in five instructions a
  /// word (the zero-byte test, x - ones & ~x & highs, with lanes of g bits;
  /// a borrow only leaves a zero lane, so the lowest flag is exact). Other
  /// g: a shift and an and per doubling of g, a tzcnt, per word.
  unsigned findFreeGroup(unsigned lo, unsigned hi, unsigned g) const {
    if (lo >= hi || hi - lo < g)
      return kNoSlot;
    const unsigned first = lo / kWordBits, last = (hi - 1) / kWordBits;
    if ((g & (g - 1)) == 0) {
      const std::uint64_t ones = kGroupStarts[__builtin_ctz(g)], highs = ones << (g - 1);
      const auto at = [&](unsigned w, std::uint64_t z) {
        return w * kWordBits + static_cast<unsigned>(__builtin_ctzll(z)) - (g - 1);
      };
      // x: 1 for a taken slot; the slots below lo and from hi on count as
      // taken (no lane across them), so only the first and last words are
      // masked.
      unsigned w = first;
      std::uint64_t x = ~free[w];
      if (w * kWordBits < lo)
        x |= (std::uint64_t{1} << (lo - w * kWordBits)) - 1;
      for (; w < last; x = ~free[++w])
        if (const std::uint64_t z = (x - ones) & ~x & highs)
          return at(w, z);
      if (hi - last * kWordBits < kWordBits)
        x |= ~std::uint64_t{0} << (hi - last * kWordBits);
      if (const std::uint64_t z = (x - ones) & ~x & highs)
        return at(last, z);
      return kNoSlot;
    }
    for (unsigned w = first; w <= last; ++w) {
      std::uint64_t m = free[w], span = 1; // m: bit i set iff slots i..i+span-1 free
      while (span < g) {
        const unsigned step = span * 2 <= g ? span : g - span;
        m &= m >> step;
        span += step;
      }
      m &= ~std::uint64_t{0} >> (g - 1); // (the group ends in this word)
      const unsigned base = w * kWordBits;
      if (base < lo)
        m &= ~std::uint64_t{0} << (lo - base);
      if (m) {
        const unsigned s = base + static_cast<unsigned>(__builtin_ctzll(m));
        return s + g <= hi ? s : kNoSlot;
      }
    }
    return kNoSlot;
  }

  /// The lowest free slot in [lo, hi), kNoSlot if none (not taken).
  unsigned findInRange(unsigned lo, unsigned hi) const {
    if (lo >= hi)
      return kNoSlot;
    unsigned w = lo / kWordBits;
    std::uint64_t m = free[w] & (~std::uint64_t{0} << (lo % kWordBits));
    const unsigned last = (hi - 1) / kWordBits;
    for (;;) {
      if (m) {
        const unsigned i = w * kWordBits + static_cast<unsigned>(__builtin_ctzll(m));
        return i < hi ? i : kNoSlot;
      }
      if (w == last)
        return kNoSlot;
      m = free[++w];
    }
  }

  /// The free slot nearest t (lo <= t < hi) among lo, lo + stride, ...
  /// below hi (stride 1 or 2), the one above on a tie; kNoSlot if none
  /// (not taken).
  unsigned findNearestInRange(unsigned lo, unsigned hi, unsigned t, unsigned stride) const {
    // (Word starts are even: slot s has lo's parity when bit s % 64 does.)
    const std::uint64_t grid = stride == 1 ? ~std::uint64_t{0}
                               : (lo & 1)  ? 0xAAAA'AAAA'AAAA'AAAAull
                                           : 0x5555'5555'5555'5555ull;
    unsigned up = kNoSlot, w = t / kWordBits;
    std::uint64_t m = free[w] & grid & (~std::uint64_t{0} << (t % kWordBits));
    for (const unsigned last = (hi - 1) / kWordBits;;) {
      if (m) {
        up = w * kWordBits + static_cast<unsigned>(__builtin_ctzll(m));
        up = up < hi ? up : kNoSlot;
        break;
      }
      if (w == last)
        break;
      m = free[++w] & grid;
    }
    if (up == t || t == lo)
      return up;
    unsigned down = kNoSlot;
    w = (t - 1) / kWordBits;
    const unsigned top = (t - 1) % kWordBits;
    m = free[w] & grid & (top == 63 ? ~std::uint64_t{0} : (std::uint64_t{2} << top) - 1);
    for (const unsigned first = lo / kWordBits;;) {
      if (m) {
        down = w * kWordBits + 63u - static_cast<unsigned>(__builtin_clzll(m));
        down = down >= lo ? down : kNoSlot;
        break;
      }
      if (w == first)
        break;
      m = free[--w] & grid;
    }
    if (up == kNoSlot)
      return down;
    if (down == kNoSlot)
      return up;
    return up - t <= t - down ? up : down;
  }

  /// The highest free slot in [lo, hi), kNoSlot if none (not taken).
  unsigned findInRangeDown(unsigned lo, unsigned hi) const {
    if (lo >= hi)
      return kNoSlot;
    unsigned w = (hi - 1) / kWordBits;
    const unsigned top = (hi - 1) % kWordBits;
    std::uint64_t m = free[w] & (top == 63 ? ~std::uint64_t{0} : (std::uint64_t{2} << top) - 1);
    const unsigned first = lo / kWordBits;
    for (;;) {
      if (m) {
        const unsigned i = w * kWordBits + 63u - static_cast<unsigned>(__builtin_clzll(m));
        return i >= lo ? i : kNoSlot;
      }
      if (w == first)
        return kNoSlot;
      m = free[--w];
    }
  }

  /// A free slot in the aligned group of g slots holding slot i (g a power
  /// of two, at most 64: a list's cell, PlacementLayer::takeCell): the
  /// lowest above i if `up_first` and there is one, else the highest below
  /// it, or the mirror; kNoSlot if the group is full. One word, a mask, a
  /// tzcnt or lzcnt.
  unsigned findInCell(unsigned i, unsigned g, bool up_first) const {
    const unsigned b = i % kWordBits, lo = b & ~(g - 1);
    const std::uint64_t cell = (g == kWordBits ? ~std::uint64_t{0} : ((std::uint64_t{1} << g) - 1) << lo);
    const std::uint64_t m = free[i / kWordBits] & cell;
    const std::uint64_t above = m & (~std::uint64_t{1} << b), below = m & ((std::uint64_t{1} << b) - 1);
    const std::uint64_t first = up_first ? above : below, then = up_first ? below : above;
    const unsigned base = i - b;
    if (first)
      return base + static_cast<unsigned>(up_first ? __builtin_ctzll(first) : 63 - __builtin_clzll(first));
    if (then)
      return base + static_cast<unsigned>(up_first ? 63 - __builtin_clzll(then) : __builtin_ctzll(then));
    return kNoSlot;
  }

  /// The free slots within r (at most 31) slots of slot i, one bit each:
  /// bit r + d is slot i + d's (slots outside the span read taken). Two
  /// word loads and a funnel shift, no loop.
  [[gnu::always_inline]] std::uint64_t window(unsigned i, unsigned r) const {
    if (__builtin_expect(i < r, 0)) // (the span's first slots: none below 0)
      return free[0] << (r - i) & ((std::uint64_t{2} << (2 * r)) - 1);
    // (A 128-bit shift of the two words: one shrd on x86-64.)
    __extension__ using Pair = unsigned __int128;
    const unsigned lo = i - r, w = lo / kWordBits;
    const Pair pair = static_cast<Pair>(free[w + 1]) << kWordBits | free[w]; // (w + 1 <= kMaxWords)
    return static_cast<std::uint64_t>(pair >> (lo % kWordBits)) &
           ((std::uint64_t{2} << (2 * r)) - 1);
  }

  /// A free slot within r (at most 31) slots of slot i: the nearest above
  /// i if `up_first` and there is one, else the nearest below, or the
  /// mirror; kNoSlot if none (not taken). One window() and a bit scan.
  [[gnu::always_inline]] unsigned findBeside(unsigned i, unsigned r, bool up_first) const {
    const std::uint64_t v = window(i, r);
    const std::uint64_t above = v >> (r + 1), below = v & ((std::uint64_t{1} << r) - 1);
    const unsigned up = above ? i + 1 + static_cast<unsigned>(__builtin_ctzll(above)) : kNoSlot;
    const unsigned down =
        below ? i - r + 63u - static_cast<unsigned>(__builtin_clzll(below)) : kNoSlot;
    if (up_first)
      return up != kNoSlot ? up : down;
    return down != kNoSlot ? down : up;
  }

  /// The lowest free slot above i within r slots, kNoSlot if none. The
  /// next slot is tested first (a list built in order finds it free).
  unsigned findUp(unsigned i, unsigned r) const {
    const unsigned n = i + 1;
    if (__builtin_expect(n < slots && isFree(n), 1))
      return n;
    const unsigned hi = i + r + 1 < slots ? i + r + 1 : slots;
    return findInRange(i + 1, hi);
  }

  /// The highest free slot below i within r slots, kNoSlot if none.
  unsigned findDown(unsigned i, unsigned r) const {
    if (i == 0)
      return kNoSlot;
    if (isFree(i - 1))
      return i - 1;
    const unsigned lo = i > r ? i - r : 0;
    unsigned w = (i - 1) / kWordBits;
    const unsigned top = (i - 1) % kWordBits;
    std::uint64_t m = free[w] & (top == 63 ? ~std::uint64_t{0}
                                           : (std::uint64_t{2} << top) - 1);
    for (;;) {
      if (m) {
        const unsigned j = w * kWordBits + 63u - static_cast<unsigned>(__builtin_clzll(m));
        return j >= lo ? j : kNoSlot;
      }
      if (w == 0 || w * kWordBits <= lo)
        return kNoSlot;
      m = free[--w];
    }
  }

  /// The free slot nearest slot i within r slots, the side `up_first`
  /// names winning ties; kNoSlot if none (not taken).
  unsigned findNear(unsigned i, unsigned r, bool up_first) const {
    const unsigned up = findUp(i, r), down = findDown(i, r);
    if (up == kNoSlot)
      return down;
    if (down == kNoSlot)
      return up;
    const unsigned du = up - i, dd = i - down;
    if (du == dd)
      return up_first ? up : down;
    return du < dd ? up : down;
  }

  /// The free slot nearest slot i anywhere in the span (kNoSlot if full):
  /// the word of i first, then words outward through the summary.
  unsigned findNearest(unsigned i, bool up_first) const {
    const unsigned near = findNear(i, kWordBits, up_first);
    if (near != kNoSlot || !summary)
      return near;
    const unsigned w = i / kWordBits;
    const std::uint64_t above = w == 63 ? 0 : summary & (~std::uint64_t{0} << (w + 1));
    const std::uint64_t below = summary & ((std::uint64_t{1} << w) - 1);
    const unsigned wu = above ? static_cast<unsigned>(__builtin_ctzll(above)) : kNoSlot;
    const unsigned wd = below ? 63u - static_cast<unsigned>(__builtin_clzll(below)) : kNoSlot;
    const unsigned up = wu == kNoSlot ? kNoSlot
                                      : wu * kWordBits + static_cast<unsigned>(__builtin_ctzll(free[wu]));
    const unsigned down = wd == kNoSlot ? kNoSlot
                                        : wd * kWordBits + 63u - static_cast<unsigned>(__builtin_clzll(free[wd]));
    if (up == kNoSlot)
      return down;
    if (down == kNoSlot)
      return up;
    return (up - i < i - down || (up - i == i - down && up_first)) ? up : down;
  }

  /// Number of free slots (tests and invariant checks; O(words)).
  unsigned countFree() const {
    unsigned n = 0;
    for (unsigned w = 0; w < kMaxWords; ++w)
      n += popcount64(free[w]);
    return n;
  }

  /// The invariants: summary mirrors the words, no bit beyond `slots`, and
  /// used + free == slots. For tests.
  bool check() const {
    for (unsigned w = 0; w < kMaxWords; ++w) {
      if (((summary >> w) & 1) != (free[w] != 0))
        return false;
      for (unsigned b = 0; b < kWordBits; ++b)
        if ((free[w] >> b & 1) && w * kWordBits + b >= slots)
          return false;
    }
    return used + countFree() == slots;
  }
};

static_assert(offsetof(SlotPage, summary) == 64, "the fixed fields fill one line");
static_assert(offsetof(SlotPage, free) == 128, "the owner's fields fill one line");
static_assert(sizeof(SlotPage) == 128 + kMaxWords * 8 + 64, "the bitmap and its last word");

/// A span with no slot: what a pointer to a span that must never be null
/// names when there is none (every search of it, and every bound check
/// against `slots`, fails).
inline constinit SlotPage kNoPage{};

} // namespace defero::pages
