// local_heap.h - LocalHeap: one thread's small-object heap. Its owner
// allocates and frees with no lock and no atomic read-modify-write; other
// threads' frees reach it through a lock-free list it collects.
//
// Structure (mimalloc's pages, snmalloc's message queue, jemalloc's
// lowest-slot-first order):
//  - per size class, the Current span (unhinted mallocs take its lowest
//    free slot) and a list of Avail spans with room; a span that fills
//    leaves every list and comes back when its owner frees into it;
//  - per size class, a Run span that is cut into runs for containers, each
//    handed to one container and filled in address order, so a container
//    whose nodes cannot go beside their neighbour gets contiguous fresh
//    memory instead of a scattered free slot (ccmalloc's "new-block"). A
//    container's first run is two cache lines; each next one is twice its
//    last, up to a K-class (never crossing one), so a small container
//    costs little and a large one gets whole K-classes;
//  - `remote`: the blocks other threads freed, pushed with one CAS each
//    (Treiber stack through the block's first word), taken whole with one
//    exchange by the owner on its slow path.
//
// Costs: malloc hit, about 15 instructions (the span's summary word, two
// tzcnt); free by the owner about 20 (page map, reciprocal division for the
// slot, bit set); a free from another thread one CAS; the slow path (span
// full) drains the remote list, then takes an Avail span or carves one.
//
// A heap outlives its thread: when the thread exits the heap is orphaned
// whole (its spans keep pointing at it, remote frees keep arriving) and the
// next new thread adopts it, so no span ever changes owner. Counters are
// plain per-heap words (relaxed atomics written only by the owner, so
// readers merge them without a data race).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "defero/kbit/size_classes.h"
#include "defero/pages/container_table.h"
#include "defero/pages/page_arena.h"
#include "defero/pages/slot_page.h"

namespace defero::pages {

/// A counter written only by its heap's owner: an add is one instruction
/// with no lock prefix (a plain add to memory on x86-64: an aligned 8-byte
/// store is atomic there, so a reader sees the old value or the new one);
/// any thread may read it.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DEFERO_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define DEFERO_TSAN 1
#endif

class OwnerCounter {
public:
  void add(std::uint64_t n) {
#if defined(__x86_64__) && !defined(DEFERO_TSAN)
    asm("addq %1, %0" : "+m"(*reinterpret_cast<std::uint64_t *>(&v_)) : "er"(n));
#else
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
#endif
  }
  std::uint64_t get() const { return v_.load(std::memory_order_relaxed); }

private:
  std::atomic<std::uint64_t> v_{0};
};

/// The process's live bytes as the heaps publish them, and the peak. A heap
/// publishes at each refill of a span (and when its thread exits, and when
/// statistics are read), so the peak misses at most, per thread, the room
/// its Current spans had at its last refill: one span (64 KiB) per size
/// class in use.
struct LiveTotals {
  std::atomic<std::int64_t> live{0}, peak{0};
  std::size_t canary = 0; ///< bytes of each slot that are not the block's

  /// Adds delta (which may be negative) and raises the peak.
  void add(std::int64_t delta) {
    if (delta == 0)
      return;
    const std::int64_t now = live.fetch_add(delta, std::memory_order_relaxed) + delta;
    raise(now);
  }
  void raise(std::int64_t now) {
    std::int64_t p = peak.load(std::memory_order_relaxed);
    while (now > p && !peak.compare_exchange_weak(p, now, std::memory_order_relaxed))
      ;
  }
};

/// The pending one-shot hint of a thread (kind 0: none). Kinds are the
/// hint ABI's (1 neighbour, 2 tree, 3 container).
struct PendingHint {
  std::uint8_t kind = 0;
  std::int8_t side = 0; // tree: 1 = insert left
  const void *container = nullptr;
  const void *where = nullptr;
};

class LocalHeap {
public:
  static constexpr unsigned kClasses = kbit::kNumClasses;
  /// A container's first run; each next one doubles, up to a K-class.
  static constexpr std::size_t kFirstRunBytes = 128;
  /// How many Avail spans a new run span is looked for among.
  static constexpr unsigned kRunScan = 8;

  LocalHeap(unsigned k, LiveTotals *totals)
      : totals_(totals), k_(k), class_shift_(32 - k) {
    for (auto &c : cur_)
      c = const_cast<SlotPage *>(&kNoRoom);
  }
  LocalHeap(const LocalHeap &) = delete;
  LocalHeap &operator=(const LocalHeap &) = delete;

  // --- the owner's fast paths ---------------------------------------------

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
    if (outbox_count_)
      flushOutbox();
    collectRemote();
    SlotPage *pg = cur_[cls];
    if (!pg->hasRoom()) {
      if (pg != &kNoRoom)
        pg->state = SpanState::Full;
      pg = nextCurrent(cls);
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

  /// Frees slot i of pg, a span this heap owns, with every call a tail
  /// call (so the inline free needs no stack frame): `done()` when freed,
  /// `refilled(pg, w)` when word w had no free slot before (the summary
  /// must learn it, noteRoom), `already()` when slot i is free already (a
  /// double free; nothing changed). The bitmap only, even for the cached
  /// word (see WordCache): no branch on where the slot is.
  template <class Done, class Refilled, class Already>
  __attribute__((always_inline)) auto freeOwned(SlotPage *pg, unsigned i, Done done,
                                                Refilled refilled, Already already) {
    const unsigned w = i / kWordBits;
    const std::uint64_t bit = std::uint64_t{1} << (i % kWordBits);
    const std::uint64_t f = pg->free[w];
    if (__builtin_expect(f & bit, 0))
      return already();
    pg->free[w] = f | bit;
    --pg->used;
    if (__builtin_expect(f == 0, 0))
      return refilled(pg, w);
    return done();
  }

  /// Word w of pg, which had no free slot, has one now: sets its summary
  /// bit, and puts a full span back on the Avail list.
  __attribute__((noinline)) void noteRoom(SlotPage *pg, unsigned w) {
    const std::uint64_t s = pg->summary;
    pg->summary = s | (std::uint64_t{1} << w);
    if (s == 0 && pg->state == SpanState::Full)
      pushAvail(pg);
  }

  /// Frees slot i of pg, a span this heap owns. `call` names the API entry
  /// in the one-line report of a double free.
  void freeLocal(SlotPage *pg, unsigned i, const char *call) {
    freeOwned(
        pg, i, [] {}, [this](SlotPage *q, unsigned w) { noteRoom(q, w); },
        [&] { os::fatal_pointer(call, pg->address(i), "double free (block is already free)"); });
  }

  /// Another thread's free of a block of one of this heap's spans.
  void freeRemote(void *p) { receive(p, p); }

  /// Hands a chain of blocks this heap owns (linked through their first
  /// words, head to tail) back to it: one CAS.
  void receive(void *head, void *tail) {
    void *old = remote_.load(std::memory_order_relaxed);
    do
      *static_cast<void **>(tail) = old;
    while (!remote_.compare_exchange_weak(old, head, std::memory_order_release,
                                          std::memory_order_relaxed));
  }

  /// This thread frees p, a block of `owner`'s (another heap's): p joins
  /// the batch for that heap in the outbox, which goes over with one CAS
  /// when it holds kOutboxBatch blocks, when another heap needs its place,
  /// and at every refill and thread exit (snmalloc's remote cache). So a
  /// thread freeing others' blocks pays one CAS per batch, not per block,
  /// and keeps at most kOutboxSlots * (kOutboxBatch - 1) blocks back.
  void freeToOther(LocalHeap *owner, void *p) {
    Outbox &o = outbox_[(reinterpret_cast<std::uintptr_t>(owner) >> 6) % kOutboxSlots];
    if (o.owner != owner) {
      send(o);
      o.owner = owner;
    }
    *static_cast<void **>(p) = o.head;
    o.head = p;
    if (!o.tail)
      o.tail = p;
    ++outbox_count_;
    if (++o.count >= kOutboxBatch)
      send(o);
  }

  /// Sends every batch of the outbox (the owner, any time).
  void flushOutbox() {
    for (Outbox &o : outbox_)
      send(o);
  }

  /// Frees every block other threads handed back (the owner, any time).
  void collectRemote() {
    if (!remote_.load(std::memory_order_relaxed))
      return;
    void *p = remote_.exchange(nullptr, std::memory_order_acquire);
    while (p) {
      void *next = *static_cast<void **>(p);
      SlotPage *pg = PageArena::get().spanOf(p);
      freeLocal(pg, pg->slotAt(p), "free");
      p = next;
    }
  }

  // --- placement --------------------------------------------------------

  /// Slot of p in pg (p must be a slot start of pg).
  static unsigned slotOf(const SlotPage *pg, const void *p) {
    return static_cast<unsigned>(
        ((reinterpret_cast<std::uintptr_t>(p) - pg->start) * pg->reciprocal) >> 48);
  }

  /// Slots within one or two cache lines of a slot: ceil(128 / size).
  static constexpr auto kLineReach = [] {
    std::array<std::uint8_t, kClasses> r{};
    for (unsigned c = 0; c < kClasses; ++c)
      r[c] = static_cast<std::uint8_t>((128u + kbit::kClassBytes[c] - 1) / kbit::kClassBytes[c]);
    return r;
  }();
  static unsigned lineReach(unsigned cls) { return kLineReach[cls]; }

  /// The span of this heap and class cls holding `anchor`, or nullptr.
  /// Its cached word, if it has one, goes back to its bitmap first, so the
  /// placement searches see every free slot beside the anchor.
  SlotPage *mySpan(const void *anchor, unsigned cls) {
    SlotPage *pg = anchor ? PageArena::get().spanOf(anchor) : nullptr;
    if (!pg || pg->owner != this || pg->cls != cls)
      return nullptr;
    if (pg->cached_word != kNoWord)
      uncache(cls);
    return pg;
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

  /// A free slot within `reach` slots of anchor's slot in pg: on the side
  /// `up_first` names if there is one there, else on the other; nullptr if
  /// none. (Not the nearest: a list or an in-order walk goes one way.)
  void *takeBeside(SlotPage *pg, const void *anchor, unsigned reach, bool up_first) {
    const unsigned i = slotOf(pg, anchor);
    unsigned j = up_first ? pg->findUp(i, reach) : pg->findDown(i, reach);
    if (j == kNoSlot)
      j = up_first ? pg->findDown(i, reach) : pg->findUp(i, reach);
    if (j == kNoSlot)
      return nullptr;
    pg->take(j);
    return pg->address(j);
  }

  /// The free slot of pg nearest anchor's (anywhere in the span); nullptr if
  /// pg is full.
  void *takeNearest(SlotPage *pg, const void *anchor, bool up_first) {
    const unsigned j = pg->findNearest(slotOf(pg, anchor), up_first);
    if (j == kNoSlot)
      return nullptr;
    pg->take(j);
    return pg->address(j);
  }

  /// The next slot of c's run that grows `down` (or up), `stride` slots on
  /// from the last, opening a run if it has none or it is used up:
  /// contiguous memory in address order.
  void *takeRun(ContainerSlot &c, unsigned cls, bool down, unsigned stride = 1) {
    Run &r = down ? c.down : c.up;
    if (r.span && r.span->cls == cls) {
      const unsigned j = down ? r.span->findInRangeDown(r.lo, r.next)
                              : r.span->findInRange(r.next, r.hi);
      if (j != kNoSlot)
        return takeFromRun(r, j, down, stride);
    }
    SlotPage *rp = run_[cls];
    if (!rp || rp->run_cursor >= rp->slots) {
      if (rp)
        retireRun(rp);
      rp = takeMostlyFree(cls);
      if (!rp)
        rp = PageArena::get().carve(cls, this);
      if (!rp)
        return nullptr;
      rp->state = SpanState::Run;
      rp->run_cursor = 0;
      run_[cls] = rp;
    }
    const unsigned lo = rp->run_cursor, hi = runEnd(rp, lo, c.runs);
    if (c.runs < 255)
      ++c.runs;
    rp->run_cursor = static_cast<std::uint16_t>(hi);
    r = Run{rp, static_cast<std::uint16_t>(lo), static_cast<std::uint16_t>(hi),
            static_cast<std::uint16_t>(down ? hi : lo)};
    // Never handed out as a run, but a node placed beside its neighbour
    // may have taken a slot of it: search.
    const unsigned j = down ? rp->findInRangeDown(lo, hi) : rp->findInRange(lo, hi);
    return j == kNoSlot ? nullptr : takeFromRun(r, j, down, stride);
  }

  /// This thread's record of container c; nullptr if the table cannot be
  /// mapped.
  ContainerSlot *container(const void *c) {
    if (__builtin_expect(!containers_.ready(), 0)) {
      void *m = PageArena::get().meta(ContainerTable::kBytes, 4096);
      if (!m)
        return nullptr;
      containers_.attach(m);
    }
    return &containers_.find(c);
  }

  /// Forgets every container (the heap changes thread).
  void forgetContainers() { containers_.forget(); }

  unsigned k() const { return k_; }

  /// Whether a and b (both in the window) lie in one K-class.
  bool sameClass(const void *a, const void *b) const {
    const std::uintptr_t x = reinterpret_cast<std::uintptr_t>(a),
                         y = reinterpret_cast<std::uintptr_t>(b);
    if (__builtin_expect(class_shift_ <= PageArena::kBaseAlignShift, 1))
      return ((x ^ y) >> class_shift_) == 0; // the window starts on a class
    const std::uintptr_t base = PageArena::get().base();
    return ((x - base) >> class_shift_) == ((y - base) >> class_shift_);
  }

  // --- bookkeeping read by the process heap ---------------------------------

  PendingHint hint;           ///< this thread's pending one-shot hint
  /// The container of the thread's last hinted allocation and the node it
  /// got (the fast path records only these; a container hint for the same
  /// container then goes beside that node).
  const void *recent_container = nullptr, *recent_node = nullptr;
  std::uint8_t divert = 0;    ///< nonzero: every call takes the full path
  /// Per size class, the blocks this heap's thread took and gave back
  /// (whichever heap owned them): an owner counter each, so live bytes
  /// cost no shared write on the fast path.
  struct Counters {
    OwnerCounter allocs[kClasses], frees[kClasses];
    OwnerCounter large_allocs, large_frees;
    OwnerCounter hints[3], hinted_allocs, hint_same_class, policy_allocs;
  } count;
  LocalHeap *next_heap = nullptr;   ///< every heap (ProcessHeap's list)
  LocalHeap *next_orphan = nullptr; ///< heaps without a thread

  /// Live bytes of small blocks by this heap's counts (allocated by its
  /// thread minus freed by it; may be negative when the thread frees blocks
  /// others allocated). Any thread may call it; O(classes).
  std::int64_t smallLiveBytes(std::size_t canary) const {
    std::int64_t live = 0;
    for (unsigned c = 0; c < kClasses; ++c)
      live += static_cast<std::int64_t>(count.allocs[c].get() - count.frees[c].get()) *
              static_cast<std::int64_t>(kbit::kClassBytes[c] - canary);
    return live;
  }
  /// Small allocations and frees counted by this heap.
  std::uint64_t smallAllocs() const {
    std::uint64_t n = 0;
    for (const auto &c : count.allocs)
      n += c.get();
    return n;
  }
  std::uint64_t smallFrees() const {
    std::uint64_t n = 0;
    for (const auto &c : count.frees)
      n += c.get();
    return n;
  }
  /// Adds this heap's change of live bytes since its last call to the
  /// process total (the owner, or anyone while the heap has no thread).
  std::int64_t livePublished() const { return live_published_.load(std::memory_order_relaxed); }
  void publishLive() {
    const std::int64_t now = smallLiveBytes(totals_->canary);
    totals_->add(now - live_published_.load(std::memory_order_relaxed));
    live_published_.store(now, std::memory_order_relaxed);
  }

private:
  /// A span that never has room: Current of a class before its first
  /// malloc, so the fast path needs no null test.
  static constexpr SlotPage kNoRoom{};
  /// The bitmap word of an empty word cache (nothing is ever freed there).
  static constexpr std::uint64_t kNoWordBits = 0;

  /// Whether span a should become Current before span b: one with a
  /// quarter of its slots free or more before one with less (a span with
  /// little room would be full again at once), then the lower address (so
  /// unhinted blocks fill memory in address order, jemalloc's
  /// lowest-slab-first, and consecutive ones lie close); among spans with
  /// little room, the emptier.
  static bool better(const SlotPage *a, const SlotPage *b) {
    const bool roomy_a = a->used * 4u <= a->slots * 3u, roomy_b = b->used * 4u <= b->slots * 3u;
    if (roomy_a != roomy_b)
      return roomy_a;
    return roomy_a ? a->start < b->start : a->used < b->used;
  }

  /// The next Current span of class cls: the best (see better()) of the
  /// first kRunScan Avail spans with room, else a fresh span.
  SlotPage *nextCurrent(unsigned cls) {
    SlotPage **best_link = nullptr;
    SlotPage **link = &avail_[cls];
    for (unsigned n = 0; *link && n < kRunScan;) {
      SlotPage *q = *link;
      if (!q->hasRoom()) { // filled by hinted takes while listed
        q->state = SpanState::Full;
        *link = q->next;
        q->next = nullptr;
        continue;
      }
      if (!best_link || better(q, *best_link))
        best_link = link;
      link = &q->next;
      ++n;
    }
    SlotPage *pg = nullptr;
    if (best_link) {
      pg = *best_link;
      *best_link = pg->next;
      pg->next = nullptr;
    }
    if (!pg) {
      pg = PageArena::get().carve(cls, this);
      if (!pg)
        return nullptr;
    }
    pg->state = SpanState::Current;
    cur_[cls] = pg;
    publishLive();
    return pg;
  }

  __attribute__((noinline)) void pushAvail(SlotPage *pg) {
    pg->state = SpanState::Avail;
    pg->next = avail_[pg->cls];
    avail_[pg->cls] = pg;
  }

  /// The emptiest of the first kRunScan Avail spans of class cls, taken
  /// off the list, if at most a quarter of it is in use (a run cut from it
  /// skips its live slots); else nullptr. Runs reuse memory that containers
  /// gave back (a queue's popped front) instead of always growing the heap.
  SlotPage *takeMostlyFree(unsigned cls) {
    SlotPage **best_link = nullptr;
    SlotPage **link = &avail_[cls];
    for (unsigned n = 0; *link && n < kRunScan; ++n, link = &(*link)->next)
      if (!best_link || (*link)->used < (*best_link)->used)
        best_link = link;
    if (!best_link || (*best_link)->used * 4u > (*best_link)->slots)
      return nullptr;
    SlotPage *pg = *best_link;
    *best_link = pg->next;
    pg->next = nullptr;
    return pg;
  }

  void *takeFromRun(Run &r, unsigned j, bool down, unsigned stride) {
    r.span->take(j);
    // Up: the next search starts `stride` above j; down: it ends
    // `stride - 1` below j (the slots between stay free for later
    // neighbours).
    r.next = static_cast<std::uint16_t>(down ? (j + 1 > stride ? j + 1 - stride : 0) : j + stride);
    return r.span->address(j);
  }

  void retireRun(SlotPage *rp) {
    if (rp->hasRoom())
      pushAvail(rp);
    else
      rp->state = SpanState::Full;
  }

  /// End of a container's run that starts at slot lo when it is the
  /// container's `runs`-th: kFirstRunBytes << runs bytes, at least one
  /// slot, and never past the end of lo's K-class.
  unsigned runEnd(const SlotPage *rp, unsigned lo, unsigned runs) const {
    const std::uintptr_t base = PageArena::get().base();
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(rp->address(lo));
    const std::uintptr_t class_end =
        class_shift_ >= 40 ? ~std::uintptr_t{0}
                           : ((((a - base) >> class_shift_) + 1) << class_shift_) + base;
    const std::uintptr_t want = runs >= 24 ? ~std::uintptr_t{0} : a + (kFirstRunBytes << runs);
    const std::uintptr_t end = want < class_end ? want : class_end;
    unsigned hi = static_cast<unsigned>((end - rp->start + rp->slot_bytes - 1) / rp->slot_bytes);
    if (hi <= lo)
      hi = lo + 1;
    return hi < rp->slots ? hi : rp->slots;
  }

  /// Blocks of one other heap this thread freed, not yet sent.
  struct Outbox {
    LocalHeap *owner = nullptr;
    void *head = nullptr, *tail = nullptr;
    unsigned count = 0;
  };
  static constexpr unsigned kOutboxSlots = 8, kOutboxBatch = 32;

  void send(Outbox &o) {
    if (o.count) {
      o.owner->receive(o.head, o.tail);
      outbox_count_ -= o.count;
      o.head = o.tail = nullptr;
      o.count = 0;
    }
  }

  Outbox outbox_[kOutboxSlots];
  unsigned outbox_count_ = 0; ///< blocks in the outbox, not yet sent
  LiveTotals *totals_;
  // The part of smallLiveBytes() in totals_ (written by the owner only).
  std::atomic<std::int64_t> live_published_{0};
  WordCache words_[kClasses];
  SlotPage *cur_[kClasses];
  SlotPage *avail_[kClasses] = {};
  SlotPage *run_[kClasses] = {};
  ContainerTable containers_;
  unsigned k_;
  unsigned class_shift_; // a K-class spans 2^class_shift_ bytes
  alignas(64) std::atomic<void *> remote_{nullptr};
};

} // namespace defero::pages
