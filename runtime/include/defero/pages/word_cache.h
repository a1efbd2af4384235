// word_cache.h - WordCacheLayer: unhinted malloc from one bitmap word per
// size class, claimed whole from the Current span (layers.h).
//
// Costs: malloc hit, a tzcnt, a clear, a multiply and an add, and a test
// that the program did not free the slot meanwhile (about 30 instructions
// with the class lookup and the counter); an empty cache claims the lowest
// word with a free slot (the summary's tzcnt), once per up to 64 mallocs.
#pragma once

#include <cstdint>

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
    std::uint64_t bits = 0;      ///< free slots still to hand out
    std::uintptr_t base = 0;     ///< address of the word's slot 0
    std::uint64_t slot_bytes = 0;
    const std::uint64_t *word = &kNoWordBits; ///< the span's bitmap word
    SlotPage *page = nullptr;    ///< the span the word belongs to
  };

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
  /// The lowest cached slot of class cls, taken (hasCached(cls) must
  /// hold); `twice` is set when the program freed that slot while it sat
  /// in the cache (then the block must not be handed out: freedTwice).
  __attribute__((always_inline)) void *takeCached(unsigned cls, bool &twice) {
    WordCache &c = words_[cls];
    const std::uint64_t b = c.bits;
    const std::uint64_t low = b & (0 - b);
    c.bits = b ^ low;
    twice = (*c.word & low) != 0;
    const auto slot = static_cast<std::uint64_t>(__builtin_ctzll(b));
    return reinterpret_cast<void *>(c.base + slot * c.slot_bytes);
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
    if (c.page)
      c.page->cached_word = kNoWord;
    const unsigned w = pg->takeLowestWord(c.bits);
    pg->cached_word = static_cast<std::uint8_t>(w);
    c.page = pg;
    c.word = &pg->free[w];
    c.slot_bytes = pg->slot_bytes;
    c.base = pg->start + std::uintptr_t{w} * kWordBits * pg->slot_bytes;
    return takeCachedChecked(cls); // (the word was just cleared: no double free)
  }

  /// Gives the word cache of class cls back to its span's bitmap (a hinted
  /// placement is about to search that span).
  __attribute__((noinline)) void uncache(unsigned cls) {
    WordCache &c = words_[cls];
    SlotPage *pg = c.page;
    if (!pg)
      return;
    const unsigned w = pg->cached_word;
    pg->cached_word = kNoWord;
    c.page = nullptr;
    c.word = &kNoWordBits;
    if (c.bits) {
      if (pg->free[w] & c.bits) // freed while cached: a double free
        freedTwice(pg->address(w * kWordBits + static_cast<unsigned>(
                                                   __builtin_ctzll(pg->free[w] & c.bits))));
      pg->free[w] |= c.bits;
      pg->summary |= std::uint64_t{1} << w;
      pg->used = static_cast<std::uint16_t>(pg->used - __builtin_popcountll(c.bits));
      c.bits = 0;
    }
  }

private:
  /// The bitmap word of an empty word cache (nothing is ever freed there).
  static constexpr std::uint64_t kNoWordBits = 0;
  WordCache words_[Super::kClasses];
};

} // namespace defero::pages
