// word_cache.h - WordCacheLayer: unhinted malloc from the class's free
// stack (blocks freed last, LIFO), else from one bitmap word per size
// class, claimed whole from the Current span (layers.h).
//
// Free stack: a push is a test and a subtract of the stack's room, two
// stores into the freed block, the head and a counter (free's fast path,
// about 32 instructions in all); a pop, 8.
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
#include "defero/pages/page_arena.h"
#include "defero/pages/span_heap.h"
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
    // The class's free stack (the free stacks, below): in the same line, so
    // that malloc and free touch one line of the heap per class.
    void *head = nullptr;  ///< the block freed last (linked through word 0)
    /// Blocks the stack may still take: limit less the blocks on it (so
    /// that a push tests and counts one counter; 0: full or closed).
    OwnerCounter room;
    /// The stack's bound (0: closed, every free misses). Written by the
    /// owner with relaxed atomic stores, as statistics read it (depth).
    std::uint64_t limit = 0;
    OwnerCounter pushes;   ///< frees that pushed a block (ever)
  };
  /// Blocks on the stack of c (any thread).
  static std::uint64_t depth(const WordCache &c) {
    const std::uint64_t room = c.room.get(), limit = __atomic_load_n(&c.limit, __ATOMIC_RELAXED);
    return room < limit ? limit - room : 0; // (read mid-change by another thread)
  }
  static_assert(sizeof(WordCache) == kClassCacheBytes,
                "the fast paths index words_ by SlotPage::cache_off");

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
  /// kCacheOffset for a node the fused entry makes, by (bytes + 7) / 8
  /// (kbit::kNodeTable's class: a node class for 17-24 and 33-40 bytes).
  static constexpr auto kNodeCacheOffset = [] {
    std::array<std::uint16_t, kbit::kNodeTable.size()> t{};
    for (std::size_t i = 0; i < t.size(); ++i)
      t[i] = static_cast<std::uint16_t>(kbit::kNodeTable[i] * sizeof(WordCache));
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

  // --- free stacks -------------------------------------------------------------
  //
  // A block the owner frees goes on the free stack of its class, linked
  // through its first word, its second word marked (freedMark); the next
  // malloc of the class takes it back, while its line is still in the
  // cache (tcmalloc's thread cache; the word cache hands out slots in
  // address order, freed long ago). A stacked block stays taken in its
  // span's bitmap. Another thread's free of the block sends it home
  // (RemoteFreeLayer) instead: a thread that kept others' blocks would
  // hand them out next to blocks their owner still uses, two threads'
  // live blocks in a line (churn_bench larson x2: 126.6 ms so, 96.5 with
  // the blocks sent home; mimalloc 109.1). When the stack is full, free's fast path gives the
  // owner's block to its bitmap and the slow path pushes the older half of
  // the stack out to the spans (flushStack), as a thread that exits and
  // the hinted slow path (for its class) do with all of it.

  /// The second word of a stacked block: a free of a block that holds it
  /// is a double free (checked on the slow path). The block's address plus
  /// an odd constant (one `lea`): an odd value some 1.5 GB above the
  /// block, which no pointer a program stores is.
  static std::uintptr_t freedMark(const void *p) {
    return reinterpret_cast<std::uintptr_t>(p) + 0x5BD1'E995u;
  }
  /// Whether p, a block of a span, carries the mark of a stacked block.
  static bool marked(const void *p) {
    return static_cast<const std::uintptr_t *>(p)[1] == freedMark(p);
  }
  /// Pushes p (a block of class cls, just freed) on its stack; false if the
  /// stack is closed or full (then flushStack, or the span's bitmap).
  __attribute__((always_inline)) static bool pushFreed(WordCache *c, void *p) {
    if (!c->room.takeOne())
      return false;
    auto *w = static_cast<std::uintptr_t *>(p);
    w[0] = reinterpret_cast<std::uintptr_t>(c->head);
    // (An atomic store, so that GCC does not pair the two through SSE
    // registers: four instructions instead of two.)
    __atomic_store_n(&w[1], freedMark(p), __ATOMIC_RELAXED);
    c->head = p;
    c->pushes.add(1);
    return true;
  }
  /// The top of a stack whose head h is not null, taken.
  __attribute__((always_inline)) static void *popFreed(WordCache *c, void *h) {
    auto *w = static_cast<std::uintptr_t *>(h);
    c->head = reinterpret_cast<void *>(w[0]);
    w[1] = 0;
    c->room.add(1);
    return h;
  }
  /// Opens the free stacks (a heap with a thread; a closed one sends every
  /// free to the slow path): up to kStackBytes per class, at most
  /// kMaxStack blocks.
  void openStacks() {
    for (unsigned cls = 0; cls < Super::kClasses; ++cls)
      openStack(cls);
    retired_ = 0;
  }
  /// Opens the free stack of class cls (empty).
  void openStack(unsigned cls) {
    const std::uint64_t n = kStackBytes / kbit::kClassBytes[cls];
    const std::uint64_t limit = n > kMaxStack ? kMaxStack : n;
    __atomic_store_n(&words_[cls].limit, limit, __ATOMIC_RELAXED);
    words_[cls].room.set(limit);
  }
  /// Closes the free stacks (they must be empty: flushStack).
  void closeStacks() {
    for (WordCache &c : words_) {
      __atomic_store_n(&c.limit, std::uint64_t{0}, __ATOMIC_RELAXED);
      c.room.set(0);
    }
  }
  /// The free stack of class cls has room (or is closed: limit 0).
  bool stackOpen(unsigned cls) const { return words_[cls].limit != 0; }
  /// Whether the free stack of class cls holds a block.
  bool stacked(unsigned cls) const { return words_[cls].head != nullptr; }
  /// Gives the blocks of class cls's stack beyond its `keep` most recent
  /// back to their bitmaps (a stack holds this heap's blocks only).
  /// Counts nothing but flushed_.
  __attribute__((noinline)) void flushStack(unsigned cls, std::uint64_t keep) {
    WordCache &c = words_[cls];
    const std::uint64_t n = depth(c);
    if (n <= keep)
      return;
    void **link = &c.head;
    for (std::uint64_t i = 0; i < keep; ++i)
      link = static_cast<void **>(*link);
    void *q = *link;
    *link = nullptr;
    std::uint64_t gone = 0;
    while (q) {
      auto *w = static_cast<std::uintptr_t *>(q);
      void *next = reinterpret_cast<void *>(w[0]);
      w[1] = 0;
      SlotPage *pg = PageArena::get().spanOf(q);
      this->freeLocal(pg, pg->slotAt(q), "free");
      ++gone;
      q = next;
    }
    c.room.add(gone);
    flushed_[cls].add(gone);
  }
  /// Every kReclaimSpans spans the heap takes (Empty, made over or fresh),
  /// the free stacks of the classes but cls go back to their spans: a
  /// stacked block keeps its span from emptying, so a thread whose sizes
  /// have moved on would otherwise pin a span per stacked block of the
  /// classes it left (up to 1024 each) and take other spans instead of making those over
  /// (takeOtherEmptyOrCarve). Up to 1024 frees a class, once per 64 spans
  /// taken.
  void reclaimIfGrowing(unsigned cls) {
    if (__builtin_expect(this->takenSince() < Super::kReclaimSpans, 1))
      return;
    this->resetTaken();
    for (unsigned c = 0; c < Super::kClasses; ++c)
      if (c != cls && stacked(c))
        flushStack(c, 0);
  }

  /// Class cls is about to grow the heap (its Current span full, no Avail
  /// span, no resident Empty one: SpanHeap::wouldCarve): each other class
  /// that holds something (holding_) and handed out no block since the
  /// last such look (no pop from its stack, no slot claimed or placed, its
  /// cached word as it was) retires. Its free stack and cached word go
  /// back to the bitmaps, its stack stays closed (its frees go straight to
  /// the bitmaps) until its next malloc that reaches mallocSlow, and its
  /// Current span, if it has touched room, goes to the Avail list
  /// (SpanHeap::retireCurrent). Their slots then take the growing class's
  /// blocks as gangs (SpanHeap::gangMalloc) instead of new memory, and
  /// their pages, once idle, go back as the heap grows (makeRoom). glibc
  /// reuses such memory for any size by coalescing; here a span is one
  /// class's, and a class's stack kept up to kStackBytes and its cached
  /// word 64 slots for a next malloc that may not come: at the peak of
  /// cc1plus's blocks up to 4 KiB, 0.76 MB had been stacked blocks and
  /// 0.40 MB claimed slots of classes it had left. Only a class that
  /// holds memory it freed retires (stacked blocks, freed slots in its
  /// Current span's claimed words, a cached word claimed below the span's
  /// fresh words): fresh memory is not resident, and retiring a class
  /// that holds only that has its Current span's pages trimmed and faulted
  /// in again (a program that only grows in 16-4096 B blocks: 48,471
  /// madvise calls instead of 307). mallocSlow looks at every slow path
  /// that would grow for the next kLookBudget after the heap took a span,
  /// then only before it takes the next: while the growing class's blocks
  /// go into gangs each of its mallocs comes there, and a class idle
  /// between two of them retires (a look every 4th or 16th: cc1plus's
  /// trace 14.4% and 17.0% fragmentation instead of 10.5); a look at
  /// every one, without the budget, retired classes over and over in a
  /// steady state (churn_bench's churn: 250.7 M -> 454.8 M instructions).
  /// The nine traces' fragmentation (Johnstone's measure), mean 13.3% ->
  /// 11.0% (glibc 11.7), cc1plus 18.6 -> 10.5 (7.9). A class a program
  /// uses keeps all three. The fast paths count nothing for this. Cost:
  /// per look, a few loads a class that holds something; per retirement,
  /// its stack's frees and a Current chosen again at its next malloc.
  __attribute__((noinline)) void retireIdle(unsigned cls) {
    for (std::uint64_t m = holding_ & ~(std::uint64_t{1} << cls); m; m &= m - 1) {
      const unsigned c = static_cast<unsigned>(__builtin_ctzll(m));
      WordCache &w = words_[c];
      // (A count that moves whenever the class hands out a block: its pops
      // raise room, its claims and placements allocs; its pushes raise
      // pushes and lower room. The stack's limit does not change meanwhile.)
      const std::uint64_t out = w.pushes.get() + w.room.get() - flushed_[c].get() +
                                this->count.allocs[c].get();
      if (out != seen_out_[c] || w.bits != seen_bits_[c]) {
        seen_out_[c] = out;
        seen_bits_[c] = w.bits;
        continue;
      }
      // Only a class that holds memory it freed: stacked blocks, freed
      // slots in its Current span's claimed words, or a cached word of
      // such slots (claimed below the span's fresh words). Fresh memory
      // it holds is not resident: retiring it would gain nothing.
      const SlotPage *cp = cache_page_[c];
      if (!w.head && !this->current(c)->touchedRoom() &&
          !(w.bits && cp && cp->cached_word + 1u < cp->fresh_word))
        continue;
      if (w.head)
        flushStack(c, 0);
      if (w.limit) { // closed until the class's next slow path (mallocSlow)
        __atomic_store_n(&w.limit, std::uint64_t{0}, __ATOMIC_RELAXED);
        w.room.set(0);
        retired_ |= std::uint64_t{1} << c;
      }
      uncache(c);
      if (this->current(c)->touchedRoom())
        this->retireCurrent(c);
      holding_ &= ~(std::uint64_t{1} << c);
    }
  }

  /// Blocks class cls took back from its stack (popFreed), ever.
  std::uint64_t stackPops(unsigned cls) const {
    const WordCache &c = words_[cls];
    return c.pushes.get() - depth(c) - flushed_[cls].get();
  }
  /// Blocks taken back from the stacks (popFreed) ever; blocks pushed ever.
  std::uint64_t stackPops() const {
    std::uint64_t n = 0;
    for (unsigned cls = 0; cls < Super::kClasses; ++cls)
      n += stackPops(cls);
    return n;
  }
  /// Frees of class cls this thread made: into bitmaps, and onto its stack.
  std::uint64_t freesOf(unsigned cls) const {
    return this->count.frees[cls].get() + words_[cls].pushes.get();
  }
  std::uint64_t stackPushes() const {
    std::uint64_t n = 0;
    for (const WordCache &c : words_)
      n += c.pushes.get();
    return n;
  }
  /// Bytes freed through the stacks and not taken back (the spans' counts
  /// still hold them as taken).
  std::int64_t stackedBytes(std::size_t canary) const {
    std::int64_t n = 0;
    for (unsigned cls = 0; cls < Super::kClasses; ++cls) {
      const WordCache &c = words_[cls];
      n += static_cast<std::int64_t>(depth(c) + flushed_[cls].get()) *
           static_cast<std::int64_t>(kbit::kClassBytes[cls] - canary);
    }
    return n;
  }
  static constexpr unsigned kLookBudget = 64;
  static constexpr std::uint64_t kStackBytes = 64 * 1024;
  static constexpr std::uint64_t kMaxStack = 1024;

  /// A slot of class cls, refilling the cache (and the Current span) if
  /// needed; nullptr when the window is exhausted. `gang`: as mallocSlow.
  void *malloc(unsigned cls, std::size_t gang = 0) {
    if (void *h = words_[cls].head)
      return popFreed(&words_[cls], h);
    if (hasCached(cls))
      return takeCachedChecked(cls);
    return mallocSlow(cls, gang);
  }

  /// Refills the word cache of class cls from the Current span (after
  /// collecting remote frees; a full span gives way to the next Current)
  /// and takes a slot. With `gang`, the bytes asked for (nonzero: a block
  /// that needs no more than 16-byte alignment and may be a gang), when the next Current would be a fresh span, a
  /// gap of the mid heap (SpanHeap::mallocHole), else a gang over another
  /// class's free slots instead if there is one (SpanHeap::gangMalloc;
  /// the cache stays empty: the next malloc of the class comes here
  /// again).
  __attribute__((noinline)) void *mallocSlow(unsigned cls, std::size_t gang = 0) {
    holding_ |= std::uint64_t{1} << cls;
    if (__builtin_expect((retired_ >> cls) & 1, 0)) {
      retired_ &= ~(std::uint64_t{1} << cls);
      openStack(cls);
    }
    if (this->hasOutbox())
      this->flushOutbox();
    this->collectRemote();
    SlotPage *pg = this->current(cls);
    if (pg->hasRoom())
      pg = this->preferTouched(cls);
    if (!pg->hasRoom()) {
      reclaimIfGrowing(cls);
      if (this->wouldCarve(cls)) { // (the heap would grow: see retireIdle)
        if (gang)
          if (void *p = this->gangFromRun(cls, gang)) {
            notePlacedBytes(kbit::kClassBytes[cls]);
            return p;
          }
        const bool looked = look_budget_ != 0;
        if (looked) {
          --look_budget_;
          retireIdle(cls);
        }
        if (gang) {
          void *p = this->mallocHole(cls);
          if (!p)
            p = this->gangMalloc(cls, gang);
          if (p) {
            notePlacedBytes(kbit::kClassBytes[cls]);
            return p;
          }
        }
        if (!looked)
          retireIdle(cls);
        look_budget_ = kLookBudget; // (a span is taken now)
      }
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
    Super::publishLive(cachedBytes(this->totals_->canary) + stackedBytes(this->totals_->canary));
  }
  /// Counts `bytes` a hint placed straight from a bitmap (beside an
  /// anchor, in a run, a cell or a zone, or a streak of continuations when
  /// it ends) toward the next publication, as a word claim counts: about 4
  /// instructions.
  __attribute__((always_inline)) void notePlacedBytes(std::uint64_t bytes) {
    unpublished_ += bytes;
    if (__builtin_expect(unpublished_ >= kPublishBytes, 0))
      publishLive();
  }
  /// Bytes a thread claims for its word caches or places by hints between
  /// two publications of its live bytes: the process's peak_live_bytes may
  /// miss up to this much per thread (see LiveTotals), and a refill costs
  /// O(1) in between (publishing reads every class's counters).
  static constexpr std::uint64_t kPublishBytes = 256 * 1024;

private:
  /// The bitmap word of an empty word cache (nothing is ever freed there).
  static constexpr std::uint64_t kNoWordBits = 0;
  alignas(64) WordCache words_[Super::kClasses];
  OwnerCounter flushed_[Super::kClasses]; ///< blocks given back from each stack (ever)
  SlotPage *cache_page_[Super::kClasses] = {}; ///< the span of each cached word
  std::uint64_t unpublished_ = 0; ///< bytes claimed since the last publishLive
  /// Each class's count and cached word at retireIdle's last look.
  std::uint64_t seen_out_[Super::kClasses] = {};
  std::uint64_t seen_bits_[Super::kClasses] = {};
  /// Classes that may hold stacked blocks, a cached word or a Current
  /// span: those whose mallocSlow ran since retireIdle last retired them.
  std::uint64_t holding_ = 0;
  unsigned look_budget_ = 0; ///< retireIdle's looks left before the heap grows again
  static_assert(Super::kClasses <= 64, "holding_ and retired_ hold a bit a class");
  std::uint64_t retired_ = 0; ///< classes whose stack retireIdle closed
};

} // namespace defero::pages
