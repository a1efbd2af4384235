// span_heap.h - SpanHeap: the bottom layer of a thread's small-object heap
// (layers.h): per size class, the Current span and a list of Avail spans
// with room; the owner's free of a slot into its span's bitmap; the owner
// counters and the live bytes they publish.
//
// A span that fills leaves every list and comes back (Avail) when its owner
// frees into it; one whose last slot in use comes back to its bitmap moves
// to the class's Empty list. The next Current is the lowest-addressed Avail
// span with a quarter of its slots free (else the emptiest), else an Empty
// span, else an Empty span of another class made over (spans of the same
// length), else a fresh span; a container's run takes an Empty span first,
// so a heap that builds and frees the same containers again and again
// reuses their memory instead of growing (mimalloc's page retirement), and
// one whose sizes shift reuses the spans the sizes it left emptied. Before
// it grows (a fresh span, or an Empty one whose memory went back to the
// OS), a plain malloc's block of 512 B to 4 KiB takes a gap of 4 KiB or
// less between the mid heap's blocks if one fits it (mallocHole), else
// lies over a run of free slots of another class's span if one has it (a
// gang: gangMalloc), so the spans the sizes it left keep no free memory
// from the sizes it moved to while a few of their blocks live on.
//
// Costs: free by the owner, the bit set and `used` (the summary and the
// lists only when the slot's word had no free slot); counters, one `add` to
// memory each. Not thread-safe: only the owner calls it (the counters may
// be read by anyone).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "defero/kbit/size_classes.h"
#include "defero/pages/counters.h"
#include "defero/pages/mid_heap.h"
#include "defero/pages/page_arena.h"
#include "defero/pages/slot_page.h"
#include "defero/platform/os.h"

namespace defero::pages {

/// Bytes the small-object window and the mid heaps hold from the OS now,
/// every thread's (spans carved less the memory of theirs given back,
/// slices handed out less their runs given back): a few relaxed loads.
inline std::size_t heldBytes() {
  const std::int64_t held = static_cast<std::int64_t>(PageArena::get().usedBytes()) -
                            g_released.load(std::memory_order_relaxed) +
                            g_mid_top.load(std::memory_order_relaxed) -
                            g_mid_released.load(std::memory_order_relaxed);
  return held > 0 ? static_cast<std::size_t>(held) : 0;
}

/// The trims that answer trimmed pages taken back (SpanHeap::refaultGone,
/// payRoom) give back at most 1/kRefaultShare of what the heaps hold from
/// the OS (heldBytes) every DEFERO_DECAY_MS, every thread's together;
/// past it, such growth stays. Each such trim is a guess that the pages
/// it gives back will stay idle, and a heap whose classes' demand moves
/// from batch to batch guesses wrong each time: what one batch's trim
/// gave back the next one faults in and answers with another trim.
/// malloc_benchmark's 16-4096 B blocks in batches of 1000 (a 4 MB heap)
/// took back 285 MB of trimmed pages in a second and ran at 9 M pairs/s,
/// against 43-44 with the budget; soak_phases, whose sizes move for good,
/// answers most of it (390 of 408 MB with a budget a heap; its peak 401.6
/// MB before, 402.9 after). Growth by fresh spans or by the mid heap is
/// answered in full.
inline constexpr std::size_t kRefaultShare = 8;
/// The budget's window: when it opened (os::now_ms), and the bytes
/// answered since. The process's, not a thread's: a thread with a small
/// heap in a process with a large one does not get the large one's
/// budget to itself.
inline std::atomic<std::uint32_t> g_refault_window{0};
inline std::atomic<std::size_t> g_refault_paid{0};
/// Whether `bytes` more of such growth may be answered now (counted if
/// so). DEFERO_DECAY_MS=0 opens a window every call. On the slow path
/// that places a span: a clock read, a few relaxed loads, one fetch_add.
inline bool refaultBudget(std::size_t bytes) {
  const std::uint32_t now = os::now_ms();
  std::uint32_t opened = g_refault_window.load(std::memory_order_relaxed);
  if (now - opened >= g_decay_ms &&
      g_refault_window.compare_exchange_strong(opened, now, std::memory_order_relaxed))
    g_refault_paid.store(0, std::memory_order_relaxed);
  return g_refault_paid.fetch_add(bytes, std::memory_order_relaxed) + bytes <=
         heldBytes() / kRefaultShare;
}

class SpanHeap {
public:
  static constexpr unsigned kClasses = kbit::kNumClasses;
  /// How many Avail spans the next Current (or a run span) is chosen among.
  static constexpr unsigned kRunScan = 8;

  SpanHeap(unsigned k, LiveTotals *totals) : totals_(totals), k_(k), class_shift_(32 - k) {
    for (auto &c : cur_)
      c = const_cast<SlotPage *>(&kNoRoom);
  }
  SpanHeap(const SpanHeap &) = delete;
  SpanHeap &operator=(const SpanHeap &) = delete;

  /// The blocks of 4 KiB to 32 MiB this heap serves by best fit
  /// (mid_heap.h).
  MidHeap mid;

  /// The Current span of class cls (kNoRoom before the class's first use).
  SlotPage *current(unsigned cls) const { return cur_[cls]; }
  /// Retires the Current span of class cls (it has no room) and makes the
  /// next one Current; nullptr when the window is exhausted.
  SlotPage *replaceCurrent(unsigned cls) {
    SlotPage *pg = cur_[cls];
    if (pg != &kNoRoom)
      pg->state = SpanState::Full;
    return nextCurrent(cls);
  }

  /// Frees slot i of pg, a span this heap owns, with every call a tail
  /// call (so the inline free needs no stack frame): `freed()` once the
  /// bit is set, then `refilled(pg, w)` when word w had no free slot before
  /// (the summary must learn it) or pg has no slot in use now (noteRoom);
  /// `already()` instead when slot i is free already (a double free;
  /// nothing changed). The bitmap only, even for the cached word (see
  /// WordCache): no branch on where the slot is.
  template <class Freed, class Refilled, class Already>
  __attribute__((always_inline)) auto freeOwned(SlotPage *pg, std::uint64_t i, Freed freed,
                                                Refilled refilled, Already already) {
    const std::uint64_t wi = i / kWordBits;
    std::uint64_t *word = &pg->free[wi];
    const std::uint64_t f = *word;
    std::uint64_t set = f;
    bool was_free;
#if defined(__x86_64__)
    // bts: the bit set and its old value in one instruction (the register
    // form takes the index mod 64).
    asm("btsq %2, %0" : "+r"(set), "=@ccc"(was_free) : "r"(i));
#else
    was_free = (f >> (i % kWordBits)) & 1;
    set = f | (std::uint64_t{1} << (i % kWordBits));
#endif
    if (__builtin_expect(was_free, 0))
      return already();
    *word = set;
    freed(); // (before the subtract: its flags are the branch's)
    bool emptied;
#if defined(__x86_64__) && !defined(DEFERO_TSAN)
    // One subtract in memory, its zero flag kept (a load, subtract and
    // store, and a test of the result, are four instructions more).
    asm("subw $1, %0" : "+m"(pg->used), "=@ccz"(emptied));
#else
    emptied = --pg->used == 0;
#endif
    // (Two tests, the subtract's flags first: as one `||` GCC keeps the
    // flag in a register.)
    if (__builtin_expect(emptied, 0))
      return refilled(pg, static_cast<unsigned>(wi));
    if (__builtin_expect(f == 0, 0))
      return refilled(pg, static_cast<unsigned>(wi));
  }

  /// Word w of pg has a free slot now, and it had none or pg has no slot
  /// in use any more: sets w's summary bit, puts a full span back on the
  /// Avail list, and moves an Avail span with no slot in use to the Empty
  /// list.
  __attribute__((noinline)) void noteRoom(SlotPage *pg, unsigned w) {
    const std::uint64_t s = pg->summary;
    pg->summary = s | (std::uint64_t{1} << w);
    if (s == 0 && pg->state == SpanState::Full) {
      pushAvail(pg);
    } else if (pg->used == 0 && pg->state == SpanState::Avail) {
      unlink(pg);
      pushEmpty(pg);
    }
  }

  /// Frees slot i of pg, a span this heap owns. `call` names the API entry
  /// in the one-line report of a double free.
  void freeLocal(SlotPage *pg, unsigned i, const char *call) {
    freeOwned(
        pg, i, [] {}, [this](SlotPage *q, unsigned w) { noteRoom(q, w); },
        [&] { os::fatal_pointer(call, pg->address(i), "double free (block is already free)"); });
  }

  unsigned k() const { return k_; }

  // --- counters ---------------------------------------------------------------

  /// Per size class, the blocks this heap's thread took and gave back
  /// (whichever heap owned them): an owner counter each, so live bytes
  /// cost no shared write on the fast path. A slot counts as taken when
  /// it leaves its bitmap (a word cache claims up to 64 at once; see
  /// WordCacheLayer::cachedSlots).
  struct Counters {
    OwnerCounter allocs[kClasses], frees[kClasses];
    OwnerCounter large_allocs, large_frees;
    OwnerCounter hints[3], hinted_allocs, hint_same_class, policy_allocs;
    /// Blocks the hinted fast path placed right above the thread's recent
    /// node (counted when their streak ends: see Recent), one count each
    /// instead of four: row k for a hint of kind k + 1 (a hint, a hinted
    /// allocation and an allocation of the class, in the anchor's K-class
    /// unless counted in placed_crossed). A one-shot hint that a malloc
    /// placed this way was counted when it was sent: the malloc takes it
    /// back from hints[k].
    OwnerCounter placed[3][kClasses];
    OwnerCounter placed_crossed;
    /// Empty spans made over for another size class.
    OwnerCounter remade;
    /// Bytes of Empty spans given back to the OS, and of those taken into
    /// use again (their pages come back, zeroed, as they are touched).
    OwnerCounter released, refaulted;
    /// Blocks made as gangs (gangMalloc).
    OwnerCounter ganged;
  } count;

  /// The node this thread placed last by a hint, and what the hinted fast
  /// path needs to place the next one right above it (push_back after
  /// push_back, an ascending insert into a tree, a container hint for the
  /// same container) with no page map, multiply or class lookup. A span
  /// never changes while a node lives in it, so page and slot stay right
  /// as long as a live node at `node` is named.
  ///
  /// The fast path counts nothing: the nodes it placed are the slots
  /// first + 1 .. slot of page (each right above the last), a *streak*,
  /// counted in placed[row][page's class] (and those past a K-class
  /// boundary in placed_crossed) when the next recent node is noted
  /// (endStreak), and by the counts below meanwhile. Page, slot, first
  /// and row are written with atomic stores, so another thread's stats
  /// read them without a data race; such a read is a snapshot that may be
  /// off by one streak (at most one span's slots) while the owner places.
  struct Recent {
    const void *node = nullptr;      ///< null: none
    const void *container = nullptr; ///< the container it was placed for
    SlotPage *page = &kNoPage;       ///< node's span (kNoPage: none; never null)
    std::uint64_t slot = 0;          ///< node's slot in page
    /// The request it answered plus row << kRowShift: what a continuation
    /// must match (all ones: none may).
    std::size_t size = ~std::size_t{0};
    std::uint64_t first = 0; ///< the streak's base slot (see above)
    std::uint8_t row = 0;    ///< the placed[] row the streak counts in (its hints' kind - 1)
  } recent;
  /// A continuation's key: its request's size and the placed[] row it
  /// counts in (a streak is one kind's: a continuation by a hint of
  /// another kind ends it through the full path).
  static constexpr unsigned kRowShift = 56;
  static constexpr std::size_t recentKey(std::size_t sz, unsigned row) {
    return sz | (std::size_t{row} << kRowShift);
  }

  /// The placements of the recent streak not yet in the counters.
  struct Streak {
    unsigned row = 0, cls = 0;
    std::uint64_t placed = 0, crossed = 0;
  };
  Streak streak() const {
    // (Acquire: the span's header, written when it was carved, is read below.)
    const SlotPage *pg = __atomic_load_n(&recent.page, __ATOMIC_ACQUIRE);
    const std::uint64_t first = __atomic_load_n(&recent.first, __ATOMIC_RELAXED),
                        slot = __atomic_load_n(&recent.slot, __ATOMIC_RELAXED);
    const unsigned row = __atomic_load_n(&recent.row, __ATOMIC_RELAXED);
    if (pg == &kNoPage || slot <= first || slot >= pg->slots || row > 2)
      return {};
    const auto last = reinterpret_cast<std::uintptr_t>(pg->address(static_cast<unsigned>(slot)));
    return {row, pg->cls, slot - first, crossings(last, slot - first, pg->slot_bytes)};
  }
  /// Counts the recent streak (the owner, before it notes another node):
  /// about 15 instructions when there is one.
  void endStreak() {
    const std::uint64_t n = recent.slot - recent.first;
    if (n == 0) // (most notes follow no continuation)
      return;
    const SlotPage *pg = recent.page;
    if (__builtin_expect(recent.row > 2, 0)) // (never: rows are hint kinds - 1)
      __builtin_trap();
    count.placed[recent.row][pg->cls].add(n);
    count.placed_crossed.add(
        crossings(reinterpret_cast<std::uintptr_t>(recent.node), n, pg->slot_bytes));
    __atomic_store_n(&recent.first, recent.slot, __ATOMIC_RELAXED);
  }
  /// The K-class boundaries among n nodes in consecutive slots of `bytes`
  /// ending at address `last`, each anchored on the slot below it: how many
  /// lie outside their anchor's class.
  std::uint64_t crossings(std::uintptr_t last, std::uint64_t n, std::size_t bytes) const {
    if (class_shift_ >= 40)
      return 0;
    // A slot as large as a K-class (K >= 26 or so): every step crosses a
    // boundary, perhaps several, and each node counts once.
    if (bytes >= (std::uintptr_t{1} << class_shift_))
      return n;
    // (Classes start on multiples of their size when the window's base is
    // one: no base to subtract.)
    const std::uintptr_t base =
        class_shift_ <= PageArena::kBaseAlignShift ? 0 : PageArena::get().base();
    return ((last - base) >> class_shift_) - ((last - n * bytes - base) >> class_shift_);
  }

  /// Blocks of class c this heap's thread took (from bitmaps and caches,
  /// or placed by a hint).
  std::uint64_t allocsOf(unsigned c) const {
    std::uint64_t n = count.allocs[c].get();
    for (const auto &row : count.placed)
      n += row[c].get();
    if (const Streak s = streak(); s.cls == c)
      n += s.placed;
    return n;
  }
  /// Slots of class c this heap's thread holds taken: its takes less its
  /// frees into bitmaps (blocks in its caches and on its stacks count as
  /// taken; 0 if its frees of other threads' blocks outnumber its takes).
  std::uint64_t takenSlots(unsigned c) const {
    const std::int64_t n = takenNet(c);
    return n > 0 ? static_cast<std::uint64_t>(n) : 0;
  }
  /// Hints of kind k + 1 the thread sent.
  std::uint64_t hintsOf(unsigned k) const {
    std::uint64_t n = count.hints[k].get();
    for (const auto &c : count.placed[k])
      n += c.get();
    if (const Streak s = streak(); s.row == k)
      n += s.placed;
    return n;
  }
  /// Blocks placed by a hint, and those of them in the anchor's K-class.
  std::uint64_t hintedAllocs() const {
    std::uint64_t n = count.hinted_allocs.get();
    for (const auto &row : count.placed)
      for (const auto &c : row)
        n += c.get();
    return n + streak().placed;
  }
  std::uint64_t hintSameClass() const {
    return hintedAllocs() - count.hinted_allocs.get() + count.hint_same_class.get() -
           count.placed_crossed.get() - streak().crossed;
  }
  /// Live bytes of small blocks by this heap's counts (allocated by its
  /// thread minus freed by it; may be negative when the thread frees blocks
  /// others allocated). Any thread may call it; O(classes).
  std::int64_t smallLiveBytes(std::size_t canary) const { return liveBytes(canary, nullptr); }
  /// Small allocations and frees counted by this heap.
  std::uint64_t smallAllocs() const {
    std::uint64_t n = 0;
    for (unsigned c = 0; c < kClasses; ++c)
      n += allocsOf(c);
    return n + mid.allocs();
  }
  std::uint64_t smallFrees() const {
    std::uint64_t n = 0;
    for (const auto &c : count.frees)
      n += c.get();
    return n + mid.frees();
  }
  /// Adds this heap's change of live bytes since its last call to the
  /// process total (the owner, or anyone while the heap has no thread);
  /// `unhanded` bytes, counted as allocated but not handed out yet (the
  /// layer above's caches), are not live.
  std::int64_t livePublished() const { return live_published_.load(std::memory_order_relaxed); }
  void publishLive(std::int64_t unhanded = 0) {
    const std::int64_t now = liveBytes(totals_->canary, peak_taken_) - unhanded;
    totals_->add(now - live_published_.load(std::memory_order_relaxed));
    live_published_.store(now, std::memory_order_relaxed);
  }


  /// Whether span a should become Current before span b: one with a free
  /// slot in memory a claim touched before one whose room lies all in
  /// words never claimed (SlotPage::touchedRoom: reuse before growth, as
  /// preferTouched), then one with a quarter of its slots free or more
  /// before one with less (a span with little room would be full again at
  /// once), then the lower address (so unhinted blocks fill memory in
  /// address order, jemalloc's lowest-slab-first, and consecutive ones lie
  /// close); among spans with little room, the emptier.
  static bool better(const SlotPage *a, const SlotPage *b) {
    const bool touched_a = a->touchedRoom(), touched_b = b->touchedRoom();
    if (touched_a != touched_b)
      return touched_a;
    const bool roomy_a = a->used * 4u <= a->slots * 3u, roomy_b = b->used * 4u <= b->slots * 3u;
    if (roomy_a != roomy_b)
      return roomy_a;
    return roomy_a ? a->start < b->start : a->used < b->used;
  }

  /// The next Current span of class cls: the best (see better()) of the
  /// first kRunScan Avail spans with room, else a fresh span. (The layer
  /// that refills from it publishes the live bytes then: publishLive.)
  SlotPage *nextCurrent(unsigned cls) {
    SlotPage *pg = takeBestAvail(cls);
    if (!pg)
      pg = takeEmptyOrCarve(cls);
    if (!pg)
      return nullptr;
    makeCurrent(cls, pg);
    return pg;
  }

  /// The Current span of class cls, which has room, unless every free slot
  /// it has lies in words no claim took yet (SlotPage::fresh_word: memory
  /// the class never touched) while the class has an Avail span (touched
  /// memory with free slots): then the best Avail span becomes Current
  /// and the old one goes on the Avail list (not for an Avail span whose
  /// room is all fresh too). A class whose blocks were
  /// freed reuses their memory before it touches more (address-ordered
  /// first fit's reason, Johnstone): cc1plus's trace 20.8 -> 20.2%
  /// fragmentation, g++'s second process 23.1 -> 22.7. Before a word claim
  /// (WordCacheLayer::mallocSlow): a load and a test when the class has
  /// no Avail span, up to kRunScan spans looked at when it swaps.
  SlotPage *preferTouched(unsigned cls) {
    SlotPage *cur = cur_[cls];
    if (!avail_[cls] || cur == &kNoRoom || cur->touchedRoom())
      return cur;
    SlotPage *pg = takeBestAvail(cls, true);
    if (!pg)
      return cur;
    pushAvail(cur);
    makeCurrent(cls, pg);
    return pg;
  }

private:
  /// The best (better()) of the first kRunScan Avail spans of class cls
  /// with room, taken off the list (the full ones it meets go Full), or
  /// nullptr; with `touched`, nullptr too if its room lies all in words
  /// never claimed (two such spans would take turns, preferTouched).
  SlotPage *takeBestAvail(unsigned cls, bool touched = false) {
    SlotPage **best_link = nullptr;
    SlotPage **link = &avail_[cls];
    for (unsigned n = 0; *link && n < kRunScan;) {
      SlotPage *q = *link;
      if (!q->hasRoom()) { // filled by hinted takes while listed
        unlink(q);
        q->state = SpanState::Full;
        continue;
      }
      if (!best_link || better(q, *best_link))
        best_link = link;
      link = &q->next;
      ++n;
    }
    if (!best_link || (touched && !(*best_link)->touchedRoom()))
      return nullptr;
    SlotPage *pg = *best_link;
    unlink(pg);
    leaveAvail(pg);
    return pg;
  }
  void makeCurrent(unsigned cls, SlotPage *pg) {
    pg->state = SpanState::Current;
    cur_[cls] = pg;
    if (__builtin_expect(room_due_ != 0, 0))
      payRoom();
  }

public:
  /// Puts pg, which has room, on the Avail list of its class (the Empty
  /// list if no slot of it is in use).
  __attribute__((noinline)) void pushAvail(SlotPage *pg) {
    if (pg->used == 0)
      return pushEmpty(pg);
    pg->state = SpanState::Avail;
    push(avail_[pg->cls], pg);
  }

  /// An Empty span of class cls taken off its list, else one of another
  /// class made over, else a fresh span (takeSomeEmptyOrCarve).
  SlotPage *takeEmptyOrCarve(unsigned cls) {
    ++taken_;
    return takeSomeEmptyOrCarve(cls, true);
  }
  /// The same without cls's own Empty spans (the caller looked there).
  SlotPage *takeOtherEmptyOrCarve(unsigned cls) { return takeSomeEmptyOrCarve(cls, false); }

private:
  /// An Empty span whose spans are as long as cls's (its own, with `own`,
  /// else another class's made over for it: PageArena::remake), else a
  /// fresh span; nullptr when the window is exhausted. A program whose
  /// allocation sizes shift reuses the spans its earlier sizes emptied
  /// instead of growing by every class's high-water mark. Resident spans
  /// first, any class's, then those whose memory went back (they fault in
  /// as a fresh span would): a class whose own Empty spans had gone back
  /// took them while another class's resident Empty span stayed idle, and
  /// soak_phases's change from 65-256 B blocks to 257-1024 B ones grew by
  /// 30 MB of its 64 after the gangs had served its fill (wouldCarve, which
  /// decides when a class gangs, counts any resident Empty span). About 50
  /// instructions a pass over the classes, once per span.
  SlotPage *takeSomeEmptyOrCarve(unsigned cls, bool own) {
    const std::uint32_t now = os::now_ms();
    PageArena::get().noteTime(now); // (the window's huge pages, once due)
    decay(now);
    const std::size_t bytes = PageArena::spanBytes(cls);
    for (const bool resident : {true, false}) {
      if (own && empty_[cls] && (!resident || !empty_[cls]->released))
        if (SlotPage *pg = takeEmpty(cls))
          return pg;
      for (unsigned n = 0; n < kClasses; ++n) {
        const unsigned c = (cls + 1 + n) % kClasses; // (from the next class up: no class is always first)
        if (c == cls || !empty_[c] || PageArena::spanBytes(c) != bytes ||
            (resident && empty_[c]->released))
          continue;
        if (SlotPage *pg = takeEmpty(c)) {
          if (recent.page == pg) { // (its node is long freed: no continuation)
            endStreak();
            recent.node = nullptr;
            recent.size = ~std::size_t{0};
            __atomic_store_n(&recent.page, const_cast<SlotPage *>(&kNoPage), __ATOMIC_RELAXED);
          }
          PageArena::remake(pg, cls);
          count.remade.add(1);
          --spans_[c];
          ++spans_[cls];
          return pg;
        }
      }
    }
    room_due_ += PageArena::spanBytes(cls);
    payRoom();
    SlotPage *pg = PageArena::get().carve(cls, this);
    if (pg)
      ++spans_[cls];
    return pg;
  }

public:

  // --- gangs ---------------------------------------------------------------
  //
  // A block of class cls laid over a run of free slots of another class's
  // span, when cls would otherwise grow the heap by a span: a 16-byte
  // header in the run's first slot, then the block (so it is never a slot
  // start: free's fast path sends it to the slow path, which reads the
  // header). Free memory crosses classes while a span still holds live
  // blocks: the 10% of a phase's blocks that outlive it no longer pin the
  // phase's memory away from the next phase's sizes (soak_phases), nor a
  // compiler's freed small blocks away from its next sizes (cc1plus's
  // trace). The run lies within one bitmap word (up to 64 slots), the
  // first that holds the block in the span (SlotPage::firstRun); the
  // span must have slots of 32 bytes or more, a multiple of 16 (the block
  // stays 16-byte aligned and 16 bytes off every slot start), and the run
  // may waste at most half the block's need (a 16 B block never takes a
  // 64 B slot). A gang holds the bytes asked for, not its class's (gangBytes:
  // malloc_usable_size and realloc read it; the statistics count a block
  // of its class): a 257 B block of the 320 B class takes 5 slots of 64 B,
  // not 6 (soak_phases on one thread, with best fit: peak 108.7 MB ->
  // 104.8-105.4). Only the owner makes and frees them in its spans'
  // bitmaps; another thread's free goes home as any block's does
  // (RemoteFreeLayer).

  static constexpr std::size_t kGangHeader = 16;
  /// A gang's header: its check word (kGangMagic ^ the block's address)
  /// and kGangTag << 16 | m << 8 | cls. Cleared when the gang is freed.
  static constexpr std::uint64_t kGangMagic = 0x9e3779b97f4a7c15u;
  static constexpr std::uint64_t kGangTag = 0x67616e67u << 16; // ("gang")
  struct Gang {
    unsigned slot, m, cls; ///< the run's first slot and length, the block's class
  };

  /// Slots of `slot_bytes` a gang of `need` bytes (the bytes asked for and
  /// the header) takes, or 0 if such a span may not hold one.
  static unsigned gangSlots(std::size_t need, std::uint32_t slot_bytes) {
    if (slot_bytes < 32 || slot_bytes % 16 != 0)
      return 0;
    const std::size_t m = (need + slot_bytes - 1) / slot_bytes;
    return m <= kWordBits && m * slot_bytes * 2 <= need * 3 ? static_cast<unsigned>(m) : 0;
  }

  /// The usable bytes of gang g of pg: its run's (at least the bytes asked
  /// for), at most its class's (which the statistics count).
  static std::size_t gangBytes(const SlotPage *pg, const Gang &g) {
    const std::size_t run = std::size_t{g.m} * pg->slot_bytes - kGangHeader;
    return run < kbit::kClassBytes[g.cls] ? run : kbit::kClassBytes[g.cls];
  }

  /// Whether p is a gang's block in pg (its header well formed, its run
  /// within pg's slots and one word, no longer than its class's block
  /// needs); its run and class in g. Reads only the header (any thread:
  /// the block is the caller's to free).
  static bool gangOf(const SlotPage *pg, const void *p, Gang &g) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    if (pg->slot_bytes < 32 || pg->slot_bytes % 16 != 0 || a < pg->start + kGangHeader)
      return false;
    const unsigned i = pg->slotAt(reinterpret_cast<const void *>(a - kGangHeader));
    if (i == kNoSlot)
      return false;
    const auto *h = reinterpret_cast<const std::uint64_t *>(a - kGangHeader);
    const std::uint64_t info = h[1];
    if (h[0] != (kGangMagic ^ a) || (info & ~std::uint64_t{0xFFFF}) != kGangTag)
      return false;
    g = {i, static_cast<unsigned>(info >> 8 & 0xFF), static_cast<unsigned>(info & 0xFF)};
    return g.cls < kClasses && g.m != 0 && i % kWordBits + g.m <= kWordBits &&
           i + g.m <= pg->slots &&
           std::size_t{g.m - 1} * pg->slot_bytes < kbit::kClassBytes[g.cls] + kGangHeader;
  }

  /// Whether the next Current span of class cls would make the heap
  /// grow: no Avail span of the class, and no resident Empty span of it or
  /// of another class to make over (only fresh ones, or Empty spans whose
  /// memory went back to the OS: their pages fault in anew). An Empty
  /// list's newest span is at its head, and the oldest go back first.
  bool wouldCarve(unsigned cls) const {
    if (avail_[cls])
      return false;
    for (std::uint64_t m = empty_mask_ & kSameSpanBytes[cls]; m; m &= m - 1)
      if (residentEmpty(static_cast<unsigned>(__builtin_ctzll(m))))
        return false;
    return true;
  }
  /// Per class, the classes whose spans are as long as its own (bit c).
  static constexpr auto kSameSpanBytes = [] {
    std::array<std::uint64_t, kClasses> m{};
    for (unsigned c = 0; c < kClasses; ++c)
      for (unsigned d = 0; d < kClasses; ++d)
        if (kbit::spanBytesFor(kbit::kClassBytes[c], PageArena::kPageBytes) ==
            kbit::spanBytesFor(kbit::kClassBytes[d], PageArena::kPageBytes))
          m[c] |= std::uint64_t{1} << d;
    return m;
  }();
  static_assert(kClasses <= 64, "a class mask is one word");
  bool residentEmpty(unsigned c) const { return empty_[c] && !empty_[c]->released; }

  /// A block of class cls's size from the free memory of this heap's mid
  /// heap (MidHeap::mallocHole: its cache, else a free run of its region),
  /// for the classes whose size is a whole number of its 256-byte units
  /// (512 B to 4 KiB: the same bytes as a slot); nullptr for the others,
  /// or if it has none. Call it when cls would grow (wouldCarve). Counted
  /// as the mid heap's block, which it is.
  void *mallocHole(unsigned cls) {
    if (!kHoleClass[cls])
      return nullptr;
    return mid.mallocHole(kbit::kClassBytes[cls]);
  }
  static constexpr auto kHoleClass = [] {
    std::array<bool, kClasses> h{};
    for (unsigned c = 0; c < kClasses; ++c)
      h[c] = kbit::kClassBytes[c] >= 2 * MidHeap::kUnitBytes &&
             kbit::kClassBytes[c] <= 4096 && kbit::kClassBytes[c] % MidHeap::kUnitBytes == 0;
    return h;
  }();

  /// A block of class cls, `bytes` (the size asked for) long, as a gang in
  /// one of this heap's Avail spans of another class, counted as an
  /// allocation of cls; nullptr if none of the kGangScan spans looked at
  /// (a rover over the classes' Avail lists, a span looked at again for as
  /// long a run only once a free lowered its `used`) has a run for it.
  /// Call it when cls would grow (wouldCarve).
  void *gangMalloc(unsigned cls, std::size_t bytes) {
    const std::size_t need = bytes + kGangHeader;
    unsigned c = gang_cls_;
    SlotPage *pg = gang_at_;
    if (!pg || pg->state != SpanState::Avail || pg->cls != c || pg->owner != this)
      pg = avail_[c];
    for (unsigned n = 0; n < kGangScan; ++n) {
      if (!pg) {
        c = c + 1 == kClasses ? 0 : c + 1;
        pg = avail_[c];
        continue;
      }
      SlotPage *next = pg->next;
      const unsigned m = c == cls ? 0 : gangSlots(need, pg->slot_bytes);
      if (m && pg->cached_word == kNoWord &&
          !(pg->no_gang_m && m >= pg->no_gang_m && pg->used >= pg->no_gang_used)) {
        // (Only slots whose memory is resident: a run over pages a trim
        // gave back would fault them in while idle resident pages
        // elsewhere stayed so.)
        std::uint64_t resident[kMaxWords];
        if (pg->gone_pages)
          pg->residentFree(PageArena::spanBase(pg), resident);
        unsigned len = 0;
        if (const unsigned j = pg->firstRun(m, pg->gone_pages ? resident : nullptr, &len); j != kNoSlot) {
          gang_cls_ = c;
          gang_at_ = pg;
          run_pg_ = pg;
          run_next_ = j + m;
          run_end_ = j + len;
          return makeGang(pg, j, m, cls);
        }
        pg->no_gang_m = static_cast<std::uint8_t>(m);
        pg->no_gang_used = pg->used;
      }
      pg = next;
    }
    gang_cls_ = c;
    gang_at_ = pg;
    return nullptr;
  }
  /// Spans (and classes with none) gangMalloc looks at a call, at most.
  static constexpr unsigned kGangScan = 64;
  /// A gang of class cls, `bytes` long, from the rest of the run of free
  /// slots the last gang found (gangMalloc took its first slots), if its
  /// span is still an Avail span of this heap, not cls's, and the slots are
  /// still free there (and not in its cached word); else nullptr.
  /// Consecutive gangs lie side by side in the run instead of each
  /// searching for one. Call it when cls would grow (wouldCarve), before
  /// gangMalloc.
  void *gangFromRun(unsigned cls, std::size_t bytes) {
    SlotPage *pg = run_pg_;
    if (!pg || pg->state != SpanState::Avail || pg->owner != this || pg->cls == cls)
      return nullptr;
    const unsigned m = gangSlots(bytes + kGangHeader, pg->slot_bytes);
    const unsigned j = run_next_;
    if (!m || j + m > run_end_ || j / kWordBits == pg->cached_word)
      return nullptr;
    const std::uint64_t mask = wordBits(j % kWordBits, m);
    if ((pg->free[j / kWordBits] & mask) != mask)
      return nullptr;
    run_next_ = j + m;
    return makeGang(pg, j, m, cls);
  }

  /// Frees gang g (gangOf) at p, of pg, a span this heap owns: its run
  /// back to the bitmap. `call` names the API entry in the one-line
  /// report of a run found free already (a corrupted header).
  void freeGang(SlotPage *pg, void *p, const Gang &g, const char *call) {
    const unsigned w = g.slot / kWordBits;
    const std::uint64_t mask = wordBits(g.slot % kWordBits, g.m);
    const std::uint64_t f = pg->free[w];
    if (f & mask)
      os::fatal_pointer(call, p, "double free (block is already free)");
    auto *h = reinterpret_cast<std::uint64_t *>(static_cast<char *>(p) - kGangHeader);
    h[0] = 0;
    h[1] = 0;
    pg->free[w] = f | mask;
    pg->used = static_cast<std::uint16_t>(pg->used - g.m);
    if (f == 0 || pg->used == 0)
      noteRoom(pg, w);
  }

  /// Gangs made (ever).
  std::uint64_t ganged() const { return count.ganged.get(); }

  /// Slots of class cls in this heap's spans, whatever their state (a
  /// span's class changes only when it is made over).
  std::uint64_t heldSlots(unsigned cls) const {
    return std::uint64_t{spans_[cls]} * kSlotsPerSpan[cls];
  }
  /// Slots a span of each class holds at most (before its colour).
  static constexpr auto kSlotsPerSpan = [] {
    std::array<std::uint32_t, kClasses> n{};
    for (unsigned c = 0; c < kClasses; ++c)
      n[c] = static_cast<std::uint32_t>(
          kbit::spanBytesFor(kbit::kClassBytes[c], PageArena::kPageBytes) / kbit::kClassBytes[c]);
    return n;
  }();
  /// The most slots of class cls this heap's thread held taken at once
  /// (takenSlots), as seen each time it published its live bytes (every
  /// 256 KiB it claimed or placed) and by noteTaken.
  std::uint64_t peakTaken(unsigned cls) const { return peak_taken_[cls]; }
  /// takenSlots(cls), raising peakTaken if it is a new high.
  std::uint64_t noteTaken(unsigned cls) {
    const std::uint64_t n = takenSlots(cls);
    if (n > peak_taken_[cls])
      peak_taken_[cls] = n;
    return n;
  }

  /// Spans this heap took for its Current ones (Empty, made over or fresh)
  /// since resetTaken: the layer above gives its free stacks back to the
  /// spans every kReclaimSpans of them.
  std::uint32_t takenSince() const { return taken_; }
  void resetTaken() { taken_ = 0; }
  static constexpr std::uint32_t kReclaimSpans = 64;

  /// Class cls's Current span, its word cache empty, goes back on the
  /// Avail list (the Empty list if no slot of it is in use; Full if it has
  /// no room): the class's next malloc chooses a Current again
  /// (nextCurrent: touched room first), and meanwhile the span's idle
  /// pages are a trim's to give back (trimIdle looks at Avail spans only).
  void retireCurrent(unsigned cls) {
    SlotPage *pg = cur_[cls];
    if (pg == &kNoRoom)
      return;
    cur_[cls] = const_cast<SlotPage *>(&kNoRoom);
    if (pg->hasRoom())
      pushAvail(pg);
    else
      pg->state = SpanState::Full;
  }

  /// An Empty span of class cls taken off its list, or nullptr. (A span a
  /// placement beside a stale anchor took slots of while it was listed
  /// goes back to Avail, or Full, on the way.)
  SlotPage *takeEmpty(unsigned cls) {
    while (SlotPage *pg = empty_[cls]) {
      unlink(pg);
      if (!empty_[cls])
        empty_mask_ &= ~(std::uint64_t{1} << cls);
      const bool refaults = pg->released;
      leaveEmpty(pg);
      if (pg->used == 0) {
        // Its memory went back to the OS: taking it grows the heap as a
        // fresh span would (makeRoom, once the span is placed: payRoom).
        if (refaults)
          room_due_ += PageArena::spanBytes(cls);
        return pg;
      }
      if (pg->hasRoom()) {
        pg->state = SpanState::Avail;
        push(avail_[cls], pg);
      } else {
        pg->state = SpanState::Full;
      }
    }
    return nullptr;
  }

  /// For a container's run: an Empty span of class cls, else the emptiest
  /// of the first kRunScan Avail spans if at most `quarters` quarters of it
  /// are in use (a run cut from it skips its live slots), taken off its
  /// list; else nullptr. Runs reuse memory that containers gave back (a
  /// queue's popped front, a list built again) instead of growing the heap.
  /// `avail_first`: that Avail span before an Empty one (the Empty spans
  /// are left to the runs of long containers: PlacementLayer::overgrown).
  /// `scan`: how many Avail spans it looks at (a run while its class
  /// churns looks at many: PlacementLayer::openRun).
  SlotPage *takeMostlyFree(unsigned cls, unsigned quarters, bool avail_first = false,
                           unsigned scan = kRunScan) {
    if (!avail_first)
      if (SlotPage *pg = takeEmpty(cls))
        return pg;
    SlotPage **best_link = nullptr;
    SlotPage **link = &avail_[cls];
    for (unsigned n = 0; *link && n < scan; ++n, link = &(*link)->next)
      if (!best_link || (*link)->used < (*best_link)->used)
        best_link = link;
    if (!best_link || (*best_link)->used * 4u > (*best_link)->slots * quarters)
      return avail_first ? takeEmpty(cls) : nullptr;
    SlotPage *pg = *best_link;
    unlink(pg);
    leaveAvail(pg);
    return pg;
  }

  /// For a list's cell (PlacementLayer::takeCell): an Avail span of class
  /// cls with g free slots in a row (SlotPage::findFreeGroup), taken off
  /// its list, its group's first slot in `slot`; nullptr if none of the
  /// kRunScan spans looked at has one. Of those, the fullest, and none at
  /// most a quarter used (those are left to containers' runs, which take
  /// such spans whole: cells scattered into them sent the runs to fresh
  /// spans). The look starts where the last one
  /// stopped (a rover along the list, back to its head when the span it
  /// names has left the list), so every listed span is looked at in turn
  /// and the cells freed by cleared lists are reused before the heap
  /// grows, whichever end of the list they are at. A span found with no
  /// group of g is not searched again until a free lowers its `used`
  /// (SlotPage::no_group_used): md_cells_plugin 3,997.4 -> 3,952.1 M
  /// instructions, a search of a span's bitmap costing about 235.
  SlotPage *takeWithGroup(unsigned cls, unsigned g, unsigned &slot) {
    SlotPage *pg = rover_[cls];
    if (!pg || pg->state != SpanState::Avail || pg->cls != cls || pg->owner != this)
      pg = avail_[cls];
    SlotPage *best = nullptr;
    unsigned best_slot = kNoSlot;
    for (unsigned n = 0; pg && n < kRunScan; ++n) {
      SlotPage *next = pg->next;
      if ((!best || pg->used > best->used) && pg->used * 4u > pg->slots &&
          !(pg->no_group_g == g && pg->used >= pg->no_group_used)) {
        if (const unsigned j = pg->findFreeGroup(0, pg->slots, g); j != kNoSlot) {
          best = pg;
          best_slot = j;
        } else {
          pg->no_group_g = static_cast<std::uint8_t>(g);
          pg->no_group_used = pg->used;
        }
      }
      pg = next ? next : (n + 1 < kRunScan ? avail_[cls] : nullptr);
      if (pg == best)
        break; // (the list is shorter than kRunScan: round again to best)
    }
    rover_[cls] = pg;
    if (!best)
      return nullptr;
    if (rover_[cls] == best)
      rover_[cls] = best->next;
    slot = best_slot;
    unlink(best);
    leaveAvail(best);
    return best;
  }

protected:
  /// A span that never has room: Current of a class before its first
  /// malloc, so the fast path needs no null test.
  static constexpr SlotPage kNoRoom{};

  static void push(SlotPage *&head, SlotPage *pg) {
    pg->next = head;
    pg->pprev = &head;
    if (head)
      head->pprev = &pg->next;
    head = pg;
  }
  /// Takes pg off the list it is on (Avail or Empty).
  static void unlink(SlotPage *pg) {
    *pg->pprev = pg->next;
    if (pg->next)
      pg->next->pprev = pg->pprev;
    pg->next = nullptr;
    pg->pprev = nullptr;
  }
  void pushEmpty(SlotPage *pg) {
    pg->state = SpanState::Empty;
    pg->cells = false; // (no list is left in it)
    push(empty_[pg->cls], pg);
    empty_mask_ |= std::uint64_t{1} << pg->cls;
    const std::uint32_t now = os::now_ms();
    pg->empty_ms = now;
    pg->released = false;
    pg->queued = true;
    pg->qprev = nullptr;
    pg->qnext = decay_head_;
    if (decay_head_)
      decay_head_->qprev = pg;
    else
      decay_tail_ = pg;
    decay_head_ = pg;
    decay(now);
  }

  /// pg leaves the Empty list: off the decay queue, or, released, counted
  /// as taken back.
  void leaveEmpty(SlotPage *pg) {
    if (pg->released) {
      pg->released = false;
      count.refaulted.add(PageArena::spanBytes(pg->cls));
      g_released.fetch_sub(static_cast<std::int64_t>(PageArena::spanBytes(pg->cls)),
                           std::memory_order_relaxed);
      return;
    }
    dequeue(pg);
    refaultGone(pg);
  }
  /// Takes pg off the decay queue if it is on it (a span decay left
  /// resident because a placement took a slot of it is not).
  void dequeue(SlotPage *pg) {
    if (!pg->queued)
      return;
    pg->queued = false;
    (pg->qprev ? pg->qprev->qnext : decay_head_) = pg->qnext;
    (pg->qnext ? pg->qnext->qprev : decay_tail_) = pg->qprev;
    pg->qnext = pg->qprev = nullptr;
  }

public:
  /// Gives the memory of this heap's Empty spans that have been empty for
  /// g_decay_ms back to the OS, and, while the small-object heap holds
  /// more than the footprint ceiling (g_max_resident), of the others too,
  /// oldest first (madvise: their pages read back as zero; the spans stay
  /// on their lists, to be taken again). The owner, on its slow paths (a
  /// span emptied, a span needed): a clock read (vDSO) and a compare when
  /// nothing is due. A span a placement beside a stale anchor took a slot
  /// of meanwhile is left resident. With `all` (a heap whose thread has
  /// exited, unless the delay is `never`), every resident Empty span goes.
  /// First the mid heap takes the blocks other threads freed for it
  /// (MidHeap::collectRemote: a load when there are none).
  void decay(std::uint32_t now, bool all = false) {
    mid.collectRemote();
    mid.decay(now, g_decay_ms, all || overCeiling());
    const std::uint32_t large_due = g_large_due.load(std::memory_order_relaxed);
    if (__builtin_expect(large_due != ~std::uint32_t{0}, 0) &&
        static_cast<std::int32_t>(now - large_due) >= 0 && g_large_decay)
      g_large_decay();
    while (SlotPage *pg = decay_tail_) {
      if (!all && now - pg->empty_ms < g_decay_ms && !overCeiling())
        return;
      releaseOldest();
    }
  }
  /// Gives back the memory of this heap's oldest resident Empty spans, at
  /// least `bytes` of it (or all there are): its mid heap is about to take
  /// that much memory never used before, and one pool's free memory should
  /// not stay resident while the other grows (a program whose sizes moved
  /// from the classes to the mid heap would hold both).
  void releaseEmpty(std::size_t bytes) {
    if (g_decay_ms == ~std::uint32_t{0}) // (never: nothing goes back)
      return;
    while (bytes && decay_tail_) {
      const std::size_t got = releaseOldest();
      bytes -= got < bytes ? got : bytes;
    }
    if (bytes)
      trimIdle(bytes);
  }

  /// Gives back up to `bytes` (rounded up to a page) of the OS pages of
  /// this heap's Avail spans that hold no slot in use, the heap being about
  /// to grow by that much (a fresh span, or the mid heap's memory): one
  /// pool's idle memory does not stay resident while another grows, at
  /// the grain of a page instead of a whole Empty span. Without it a span
  /// keeps every page its class's busiest moment touched for as long as
  /// one block of it lives: soak_phases's change from 1-4 KiB blocks to
  /// 4-16 KiB ones peaked at 510 MB (332 with it; glibc 377), cc1plus's
  /// trace 27.6% fragmentation (24.9). A block on a free stack, or a slot
  /// of a cached word, keeps its page in use. Looks at up to kTrimScan
  /// spans a call, going on where the last call stopped (a rover over
  /// the classes' Avail lists), and at a span again only once a free has
  /// lowered its `used`. Pages given back in a huge page split it (the
  /// window past PageArena::kHugeFrom). None under DEFERO_DECAY_MS=never.
  /// Cost: nothing on malloc and free; per call up to kTrimScan spans'
  /// headers, about 20 instructions an OS page of those looked at, one
  /// madvise a run of pages given back.
  std::size_t trimIdle(std::size_t bytes) {
    if (g_decay_ms == ~std::uint32_t{0})
      return 0;
    std::size_t got = 0;
    unsigned c = trim_cls_;
    SlotPage *pg = trim_at_;
    if (!pg || pg->state != SpanState::Avail || pg->cls != c || pg->owner != this)
      pg = avail_[c];
    for (unsigned n = 0; n < kTrimScan && got < bytes; ++n) {
      if (!pg) {
        c = c + 1 == kClasses ? 0 : c + 1;
        pg = avail_[c];
        continue;
      }
      SlotPage *next = pg->next;
      const auto pages = static_cast<unsigned>(PageArena::spanBytes(c) / os::kPageBytes);
      if (pages <= 16 && !(pg->trim_used && pg->used >= pg->trim_used)) {
        got += trimSpan(pg, pages);
        pg->trim_used = pg->used ? pg->used : 1;
      }
      pg = next;
    }
    trim_cls_ = c;
    trim_at_ = pg;
    return got;
  }
  /// The heap is about to grow by `bytes` of memory not resident now (a
  /// fresh span, or an Empty one whose memory went back): the mid heap's
  /// oldest resident free runs go back first, at least as much (the other
  /// way round from releaseEmpty), then idle pages of partly used spans
  /// (trimIdle). One pool's free memory does not stay resident while the
  /// other grows: soak_phases's change from 16-128 KiB blocks to 16-64 B
  /// ones took back the classes' released Empty spans and, without the
  /// first step there, held the mid heap's freed runs until their delay.
  void makeRoom(std::size_t bytes) {
    if (g_decay_ms == ~std::uint32_t{0}) // (never: nothing goes back)
      return;
    mid.releaseFree(bytes);
    trimIdle(bytes);
  }
  /// Spans (and classes with none) trimIdle looks at a call, at most.
  static constexpr unsigned kTrimScan = 64;

private:
  /// Takes the m free slots from slot j of pg (one word) for a gang of
  /// class cls: the header written, pg off the Avail list if it is full
  /// now, its trimmed pages the run covers counted as taken again.
  void *makeGang(SlotPage *pg, unsigned j, unsigned m, unsigned cls) {
    const unsigned w = j / kWordBits;
    const std::uint64_t mask = wordBits(j % kWordBits, m);
    const std::uint64_t f = pg->free[w] & ~mask;
    pg->free[w] = f;
    if (!f)
      pg->summary &= ~(std::uint64_t{1} << w);
    pg->used = static_cast<std::uint16_t>(pg->used + m);
    if (!pg->hasRoom()) {
      if (gang_at_ == pg)
        gang_at_ = pg->next;
      unlink(pg);
      pg->state = SpanState::Full;
    }
    const std::uintptr_t a = pg->start + std::uintptr_t{j} * pg->slot_bytes;
    if (pg->gone_pages) {
      const std::uintptr_t base = PageArena::spanBase(pg);
      const std::uintptr_t lo = (a - base) / os::kPageBytes,
                           hi = (a + std::uintptr_t{m} * pg->slot_bytes - 1 - base) / os::kPageBytes;
      const auto pages = static_cast<std::uint16_t>(((std::uint32_t{1} << (hi + 1)) - 1) &
                                                    ~((std::uint32_t{1} << lo) - 1));
      if (const unsigned back = popcount64(pg->gone_pages & pages)) {
        noteRefaulted(std::size_t{back} * os::kPageBytes);
        pg->gone_pages &= static_cast<std::uint16_t>(~pages);
      }
    }
    auto *h = reinterpret_cast<std::uint64_t *>(a);
    const std::uintptr_t p = a + kGangHeader;
    h[0] = kGangMagic ^ p;
    h[1] = kGangTag | std::uint64_t{m} << 8 | cls;
    count.allocs[cls].add(1);
    count.ganged.add(1);
    return reinterpret_cast<void *>(p);
  }

  std::size_t trimSpan(SlotPage *pg, unsigned pages) {
    const std::uintptr_t base = PageArena::spanBase(pg);
    const auto idle = static_cast<std::uint16_t>(pg->idlePages(base, pages));
    if (const unsigned back = popcount64(pg->gone_pages & ~idle))
      noteRefaulted(std::size_t{back} * os::kPageBytes);
    std::uint16_t gone = pg->gone_pages & idle;
    const std::uint16_t go = idle & static_cast<std::uint16_t>(~gone);
    for (std::uint32_t m = go; m;) { // one madvise a run of pages
      const unsigned lo = static_cast<unsigned>(__builtin_ctz(m));
      const unsigned n = static_cast<unsigned>(__builtin_ctz(~(m >> lo)));
      PageArena::get().giveBack(reinterpret_cast<void *>(base + std::uintptr_t{lo} * os::kPageBytes),
                                std::size_t{n} * os::kPageBytes);
      m &= ~(((std::uint32_t{1} << n) - 1) << lo);
    }
    std::size_t bytes = 0;
    if (go) {
      bytes = std::size_t{popcount64(go)} * os::kPageBytes;
      count.released.add(bytes);
      g_released.fetch_add(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
      gone |= go;
    }
    pg->gone_pages = gone;
    return bytes;
  }
  /// pg leaves the Avail list to be filled (Current, or a container's
  /// run or cell): the pages trim gave back count as taken again now.
  void leaveAvail(SlotPage *pg) {
    if (__builtin_expect(pg->gone_pages != 0, 0))
      refaultGone(pg);
    pg->trim_used = 0;
  }
  /// pg, taken to be filled, has pages a trim gave back (gone_pages): they
  /// count as taken again, and as they fault in as it fills the heap grows
  /// by them, so the mid heap's idle runs and idle pages of other spans go
  /// back first, as much (makeRoom, once the span is placed: payRoom),
  /// within the process's budget (kRefaultShare). Without it a thread
  /// whose old sizes' survivors were being freed kept their idle pages
  /// resident while it took back the trimmed pages of the spans its new
  /// sizes emptied: soak_phases's change from 257-1024 B blocks to 1-4 KiB
  /// ones grew by 21 MB of 64 so.
  void refaultGone(SlotPage *pg) {
    if (const std::size_t bytes = forgetGone(pg)) {
      noteRefaulted(bytes);
      room_due_ += bytes;
      refault_due_ += bytes;
    }
  }
  /// Answers the growth noted in room_due_ (makeRoom), at a point where
  /// every span is on the list its state names: the system calls it makes
  /// must not widen the moments a span is off its list (a fork from
  /// another thread then hands the child this heap, whose orphan sweep
  /// frees into its spans: stress.fork_preload failed 5 runs in 8 when the
  /// trim ran between a span's unlink and its new state).
  void payRoom() {
    std::size_t bytes = room_due_;
    if (refault_due_ && !refaultBudget(refault_due_))
      bytes -= refault_due_;
    room_due_ = refault_due_ = 0;
    makeRoom(bytes);
  }
  void noteRefaulted(std::size_t bytes) {
    count.refaulted.add(bytes);
    g_released.fetch_sub(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
  }
  std::size_t forgetGone(SlotPage *pg) {
    const std::size_t bytes = std::size_t{popcount64(pg->gone_pages)} * os::kPageBytes;
    pg->gone_pages = 0;
    pg->trim_used = 0;
    return bytes;
  }

  /// The oldest span on the decay queue leaves it, its memory given back
  /// if it is still Empty; the bytes given back.
  std::size_t releaseOldest() {
    SlotPage *pg = decay_tail_;
    dequeue(pg);
    if (pg->used != 0 || pg->state != SpanState::Empty)
      return 0;
    const std::size_t span = PageArena::spanBytes(pg->cls);
    PageArena::get().giveBack(reinterpret_cast<void *>(PageArena::spanBase(pg)), span);
    const std::size_t bytes = span - forgetGone(pg); // (its trimmed pages were counted then)
    pg->released = true;
    count.released.add(bytes);
    g_released.fetch_add(static_cast<std::int64_t>(bytes), std::memory_order_relaxed);
    return bytes;
  }

public:
  /// Bytes of this heap's spans whose memory is back with the OS.
  std::int64_t releasedBytes() const {
    return static_cast<std::int64_t>(count.released.get() - count.refaulted.get()) +
           mid.releasedBytes();
  }

protected:

  LiveTotals *totals_;
  // The part of smallLiveBytes() in totals_ (written by the owner only).
  std::atomic<std::int64_t> live_published_{0};
  SlotPage *cur_[kClasses];
  SlotPage *avail_[kClasses] = {};
  SlotPage *empty_[kClasses] = {};
  std::uint64_t empty_mask_ = 0; // bit c: empty_[c] is not null
  unsigned k_;
  unsigned class_shift_; // a K-class spans 2^class_shift_ bytes
  SlotPage *rover_[kClasses] = {}; // takeWithGroup's place in avail_
  std::uint32_t taken_ = 0; // spans taken by takeEmptyOrCarve since resetTaken
  std::uint32_t spans_[kClasses] = {};      // this heap's spans of each class (heldSlots)
  std::uint64_t peak_taken_[kClasses] = {}; // (peakTaken)
  SlotPage *decay_head_ = nullptr, *decay_tail_ = nullptr; // resident Empty spans
  unsigned trim_cls_ = 0;       // trimIdle's place: the class
  SlotPage *trim_at_ = nullptr; // and the span on its Avail list
  std::size_t room_due_ = 0;    // growth makeRoom has not answered yet (payRoom)
  std::size_t refault_due_ = 0; // the part of it trimmed pages taken back make
  unsigned gang_cls_ = 0;       // gangMalloc's place: the class
  SlotPage *gang_at_ = nullptr; // and the span on its Avail list
  SlotPage *run_pg_ = nullptr;  // the span of the last gang's run (gangFromRun)
  unsigned run_next_ = 0, run_end_ = 0; // its next free slot, and its end

private:
  /// Slots of class c taken by this heap's thread less its frees of the
  /// class into bitmaps (negative when it freed other threads' blocks).
  std::int64_t takenNet(unsigned c) const {
    return static_cast<std::int64_t>(allocsOf(c) - count.frees[c].get());
  }
  /// The small blocks' live bytes (smallLiveBytes); with `peaks`, each
  /// class's taken slots raise its entry there if they are a new high.
  std::int64_t liveBytes(std::size_t canary, std::uint64_t *peaks) const {
    std::int64_t live = 0;
    for (unsigned c = 0; c < kClasses; ++c) {
      const std::int64_t taken = takenNet(c);
      if (peaks && taken > 0 && static_cast<std::uint64_t>(taken) > peaks[c])
        peaks[c] = static_cast<std::uint64_t>(taken);
      live += taken * static_cast<std::int64_t>(kbit::kClassBytes[c] - canary);
    }
    return live + mid.liveBytes() - static_cast<std::int64_t>(mid.liveBlocks() * canary);
  }
};

} // namespace defero::pages
