// word_cache.h - WordCacheLayer: unhinted malloc from one bitmap word per
// size class, claimed whole from the Current span (layers.h).
//
// Costs: malloc hit, a tzcnt, a clear, a multiply and an add, and a test
// that the program did not free the slot meanwhile (about 22 instructions
// with the class lookup; no counter: a claimed word counts all its slots
// at once); an empty cache claims the next word with a free slot (the
// summary's tzcnt), once per up to 64 mallocs.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "defero/kbit/size_classes.h"
#include "defero/pages/layers.h"
#include "defero/platform/os.h"

namespace defero::pages {

template <RemoteSink Super> class WordCacheLayer : public Super {
public:
  using Super::Super;

  /// The word cache of a size class: the free slots of one bitmap word of
  /// the Current span, claimed whole, so that an unhinted malloc is a
  /// tzcnt, a multiply and an add (mimalloc's page-local free list, as a
  /// bitmap word). The claimed slots read as taken in the span's bitmap
  /// and count in its `used`; the span's `cached_word` names the word (the
  /// placement searches give it back first, uncache). A free never looks
  /// at the cache: it sets its bit in the bitmap as always, so a slot that
  /// is still in the cache and is freed (a double free of a block freed
  /// before the word was claimed) shows in the bitmap, and the cache
  /// checks that bit when it hands the slot out.
  struct WordCache {
    /// Free slots still to hand out. Written by the owner only, with
    /// relaxed atomic stores (a plain mov), so that statistics may read it
    /// from any thread (cachedSlots).
    std::uint64_t bits = 0;
    std::uintptr_t base = 0;     ///< address of the word's slot 0
    std::uint64_t slot_bytes = 0;
    const std::uint64_t *word = &kNoWordBits; ///< the span's bitmap word
  };
  static_assert(sizeof(WordCache) == 32, "the fast path indexes words_ by a shift");

  /// Whether slot i of pg, a span this heap owns, is free (in its bitmap or
  /// in the word cache).
  bool isFree(const SlotPage *pg, unsigned i) const {
    const WordCache &c = words_[pg->cls];
    if (c.word == &pg->free[i / kWordBits] && ((c.bits >> (i % kWordBits)) & 1))
      return true;
    return pg->isFree(i);
  }

  /// Whether the word cache of class cls has a slot (mallocFast's test).
  __attribute__((always_inline)) bool hasCached(unsigned cls) const {
    return words_[cls].bits != 0;
  }
  /// The word cache of class cls (the fast path reads it once).
  __attribute__((always_inline)) WordCache *cache(unsigned cls) { return &words_[cls]; }
  /// For a request of up to kbit::kSmallTableMax bytes, (bytes + 15) / 16,
  /// the byte offset of its class's word cache in words_ (kSmallTable's
  /// class times 32: the fast path's class lookup is one load).
  static constexpr auto kCacheOffset = [] {
    std::array<std::uint16_t, kbit::kSmallTable.size()> t{};
    for (std::size_t i = 0; i < t.size(); ++i)
      t[i] = static_cast<std::uint16_t>(kbit::kSmallTable[i] * sizeof(WordCache));
    return t;
  }();
  /// The word cache at offset `off` (kCacheOffset) and its class.
  __attribute__((always_inline)) WordCache *cacheAt(std::size_t off) {
    return reinterpret_cast<WordCache *>(reinterpret_cast<char *>(words_) + off);
  }
  static unsigned classAt(std::size_t off) { return static_cast<unsigned>(off / sizeof(WordCache)); }
  /// The lowest slot of c, whose bits b (c->bits) are not 0, taken; `twice`
  /// is set when the program freed that slot while it sat in the cache
  /// (then the block must not be handed out: freedTwice).
  __attribute__((always_inline)) static void *takeFrom(WordCache *c, std::uint64_t b,
                                                       bool &twice) {
    __atomic_store_n(&c->bits, b & (b - 1), __ATOMIC_RELAXED);
    std::uint64_t slot;
#if defined(__x86_64__)
    // tzcnt (bsf before BMI: the same for b != 0), 64-bit: no extension.
    asm("tzcnt %1, %0" : "=r"(slot) : "r"(b) : "cc");
#else
    slot = static_cast<std::uint64_t>(__builtin_ctzll(b));
#endif
    twice = (*c->word >> slot) & 1;
    return reinterpret_cast<void *>(c->base + slot * c->slot_bytes);
  }
  /// The lowest cached slot of class cls, taken (hasCached(cls) must hold).
  __attribute__((always_inline)) void *takeCached(unsigned cls, bool &twice) {
    return takeFrom(&words_[cls], words_[cls].bits, twice);
  }
  /// takeCached, reporting a slot freed while cached (the slow paths).
  void *takeCachedChecked(unsigned cls) {
    bool twice;
    void *p = takeCached(cls, twice);
    if (__builtin_expect(twice, 0))
      freedTwice(p);
    return p;
  }
  /// Reports p, a cached slot the program freed: a block freed twice (the
  /// second free came after its word was claimed for reuse).
  [[noreturn]] __attribute__((noinline, cold)) static void *freedTwice(void *p) {
    os::fatal_pointer("free", p,
                      "double free (block is already free; found when its slot "
                      "came up for reuse)");
  }

  /// A slot of class cls, refilling the cache (and the Current span) if
  /// needed; nullptr when the window is exhausted.
  void *malloc(unsigned cls) {
    if (hasCached(cls))
      return takeCachedChecked(cls);
    return mallocSlow(cls);
  }

  /// Refills the word cache of class cls from the Current span (after
  /// collecting remote frees; a full span gives way to the next Current)
  /// and takes a slot.
  __attribute__((noinline)) void *mallocSlow(unsigned cls) {
    if (this->hasOutbox())
      this->flushOutbox();
    this->collectRemote();
    SlotPage *pg = this->current(cls);
    if (!pg->hasRoom()) {
      pg = this->replaceCurrent(cls);
      if (!pg)
        return nullptr;
    }
    WordCache &c = words_[cls];
    if (cache_page_[cls])
      cache_page_[cls]->cached_word = kNoWord;
    std::uint64_t bits;
    const unsigned w = pg->takeNextWord(bits);
    // The claimed slots count as allocated now (so the fast path counts
    // nothing); uncache() and cachedSlots() take back what is unhanded.
    const unsigned n = popcount64(bits);
    this->count.allocs[cls].add(n);
    __atomic_store_n(&c.bits, bits, __ATOMIC_RELAXED);
    // The live bytes reach the process total (and its peak) once this
    // thread has claimed kPublishBytes since it last published.
    unpublished_ += n * pg->slot_bytes;
    if (__builtin_expect(unpublished_ >= kPublishBytes, 0))
      publishLive();
    pg->cached_word = static_cast<std::uint8_t>(w);
    cache_page_[cls] = pg;
    c.word = &pg->free[w];
    c.slot_bytes = pg->slot_bytes;
    c.base = pg->start + std::uintptr_t{w} * kWordBits * pg->slot_bytes;
    return takeCachedChecked(cls); // (the word was just cleared: no double free)
  }

  /// Gives the word cache of class cls back to its span's bitmap (a hinted
  /// placement is about to search that span).
  __attribute__((noinline)) void uncache(unsigned cls) {
    WordCache &c = words_[cls];
    SlotPage *pg = cache_page_[cls];
    if (!pg)
      return;
    const unsigned w = pg->cached_word;
    pg->cached_word = kNoWord;
    cache_page_[cls] = nullptr;
    c.word = &kNoWordBits;
    if (c.bits) {
      if (pg->free[w] & c.bits) // freed while cached: a double free
        freedTwice(pg->address(w * kWordBits + static_cast<unsigned>(
                                                   __builtin_ctzll(pg->free[w] & c.bits))));
      pg->free[w] |= c.bits;
      pg->summary |= std::uint64_t{1} << w;
      pg->used = static_cast<std::uint16_t>(pg->used - popcount64(c.bits));
      this->count.allocs[cls].add(0 - static_cast<std::uint64_t>(popcount64(c.bits)));
      __atomic_store_n(&c.bits, 0, __ATOMIC_RELAXED);
    }
  }
  /// Gives every word cache back (the thread exits: its counts become
  /// exact).
  void uncacheAll() {
    for (unsigned cls = 0; cls < Super::kClasses; ++cls)
      uncache(cls);
  }

  /// Slots of the word caches counted in `allocs` but not handed out yet,
  /// and their bytes. Any thread may call them (as exact as the counters
  /// when the owner is not allocating meanwhile).
  std::uint64_t cachedSlots() const {
    std::uint64_t n = 0;
    for (const WordCache &c : words_)
      n += popcount64(__atomic_load_n(&c.bits, __ATOMIC_RELAXED));
    return n;
  }
  std::int64_t cachedBytes(std::size_t canary) const {
    std::int64_t n = 0;
    for (unsigned cls = 0; cls < Super::kClasses; ++cls)
      if (const std::uint64_t b = __atomic_load_n(&words_[cls].bits, __ATOMIC_RELAXED))
        n += popcount64(b) * static_cast<std::int64_t>(kbit::kClassBytes[cls] - canary);
    return n;
  }
  /// SpanHeap::publishLive without the unhanded slots (the owner, or
  /// anyone while the heap has no thread).
  void publishLive() {
    unpublished_ = 0;
    Super::publishLive(cachedBytes(this->totals_->canary));
  }
  /// Bytes a thread claims between two publications of its live bytes:
  /// the process's peak_live_bytes may miss up to this much per thread
  /// (plus the unhanded slots of one word per size class), and a refill
  /// costs O(1) in between (publishing reads every class's counters).
  static constexpr std::uint64_t kPublishBytes = 256 * 1024;

private:
  /// The bitmap word of an empty word cache (nothing is ever freed there).
  static constexpr std::uint64_t kNoWordBits = 0;
  WordCache words_[Super::kClasses];
  SlotPage *cache_page_[Super::kClasses] = {}; ///< the span of each cached word
  std::uint64_t unpublished_ = 0; ///< bytes claimed since the last publishLive
};

} // namespace defero::pages
