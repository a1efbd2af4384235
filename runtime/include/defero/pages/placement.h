// placement.h - PlacementLayer: the K-Bit placement on top of a thread's
// small-object heap (layers.h). A hinted node goes beside its anchor (a
// free slot within a line or two, one side first), else into a run of its
// container: contiguous slots cut from a run span, filled in address order
// (growing down for nodes linked before their neighbour), two cache lines
// first and doubling up to a K-class, never across one (ccmalloc's
// "new-block", the Defero paper's K-classes). Runs that grow up are cut
// from the bottom of one span per size class and those that grow down from
// the top of another, each next run where the last one (or the nodes
// placed beside it) ended: a list that grows at both ends lies in two
// address-ordered streams, broken only where a span ends. The first node
// of an empty list opens a cell instead: two aligned cache lines of free
// slots (ceil(128 / size) of them), which the list's next nodes fill beside
// it however many other lists are filled in between; a hole a list leaves
// in its cell is its own next slot (findBeside looks in the anchor's cell
// first); a list filled in turn with others that fills its cell opens a
// grown one (512 bytes). A class whose spans hold an eighth more slots than
// its most blocks taken takes no whole span for cells and small runs
// (overgrown): lists cleared and refilled fill its holes instead of
// growing the heap. What a thread knows of the containers it inserts
// into is a ContainerTable.
//
// Costs: beside an anchor, the anchor's span (page map), its slot (a
// multiply), a masked tzcnt or lzcnt in one or two words; a run, a masked
// tzcnt per word of the run; a cell, two shifts and ands and a tzcnt per
// word of the cell span searched (and, when that span has none left, up to
// kRunScan other spans' bitmaps).
#pragma once

#include <array>
#include <cstdint>

#include "defero/kbit/size_classes.h"
#include "defero/pages/container_table.h"
#include "defero/pages/layers.h"
#include "defero/pages/page_arena.h"

namespace defero::pages {

template <SlotSource Super> class PlacementLayer : public Super {
public:
  using Super::Super;
  using Super::kClasses;
  /// A container's first run; each next one doubles, up to a K-class.
  static constexpr std::size_t kFirstRunBytes = 128;
  /// A container's first kSmallRuns runs (128 and 256 bytes) are cut from
  /// spans up to three quarters used, the later ones from spans at most a
  /// quarter used: many small containers (debruijn_net's 65,536 lists of
  /// about four nodes) fill the holes that runs of forgotten containers
  /// left, while a long list's runs stay contiguous. (All runs from spans
  /// up to three quarters used: debruijn_net_plugin's peak footprint 15.6
  /// -> 12.8 MB, but the list kernel's for_each after churn 2.7 -> 4.6-12.6
  /// ns per node.)
  static constexpr unsigned kSmallRuns = 2;

  /// Slot of p in pg (p must be a slot start of pg).
  static unsigned slotOf(const SlotPage *pg, const void *p) {
    return pg->slotHolding(p);
  }

  /// Slots within one or two cache lines of a slot: ceil(128 / size); the
  /// 40-byte node class's, 3 (not 4: a reach that is a power of two takes
  /// findBeside's aligned cells first, which do not line up in 40-byte
  /// slots; with 4, a set's build took 20 more instructions an insert).
  static constexpr auto kLineReach = [] {
    std::array<std::uint8_t, kClasses> r{};
    for (unsigned c = 0; c < kClasses; ++c) {
      unsigned n = (128u + kbit::kClassBytes[c] - 1) / kbit::kClassBytes[c];
      if (kbit::isNodeClass(c) && (n & (n - 1)) == 0)
        --n;
      r[c] = static_cast<std::uint8_t>(n);
    }
    return r;
  }();
  static_assert(kLineReach[kbit::kNodeClass24] == 6 && kLineReach[kbit::kNodeClass40] == 3);
  static unsigned lineReach(unsigned cls) { return kLineReach[cls]; }

  /// The span of this heap and class cls holding `anchor`, or nullptr.
  /// Its cached word, if it has one, goes back to its bitmap first, so the
  /// placement searches see every free slot beside the anchor.
  SlotPage *mySpan(const void *anchor, unsigned cls) {
    SlotPage *pg = anchor ? PageArena::get().spanOf(anchor) : nullptr;
    if (!pg || pg->owner != this || pg->cls != cls)
      return nullptr;
    if (pg->cached_word != kNoWord)
      this->uncache(cls);
    return pg;
  }

  /// Marks pg (this heap's) as a span where a hint placed a block; the
  /// first time, the blocks of its class on this thread's free stack go
  /// back to their bitmaps (so that none of pg's is on it: the owner's
  /// frees of a placed span's blocks go straight to its bitmap).
  void notePlaced(SlotPage *pg) {
    if (__builtin_expect(pg->markPlaced(), 0))
      this->flushStack(pg->cls, 0);
  }

  /// Whether p is a block this heap owns and has handed out (not free).
  bool holdsLive(const void *p) const {
    const SlotPage *pg = PageArena::get().spanOf(p);
    if (!pg || pg->owner != this)
      return false;
    const unsigned i = pg->slotAt(p);
    return i != kNoSlot && !this->isFree(pg, i);
  }

  /// Slot j of pg (this heap's), if it is not kNoSlot, taken and counted;
  /// pg marked as placed in.
  void *takeSlot(SlotPage *pg, unsigned j) {
    if (j == kNoSlot)
      return nullptr;
    pg->take(j);
    notePlaced(pg);
    this->count.allocs[pg->cls].add(1);
    return pg->address(j);
  }

  /// A free slot within `reach` slots of anchor's slot in pg: on the side
  /// `up_first` names if there is one there, else on the other; nullptr if
  /// none. (Not the nearest: a list or an in-order walk goes one way.)
  void *takeBeside(SlotPage *pg, const void *anchor, unsigned reach, bool up_first) {
    const unsigned i = slotOf(pg, anchor);
    return takeSlot(pg, findBeside(pg, i, reach, up_first));
  }

  /// A free slot within `reach` slots of slot i of pg (reach = lineReach
  /// of pg's class): in i's cell first when the class has cells (a hole a
  /// list left in its own two lines, not the next list's), then on the
  /// side `up_first` names, then the other; kNoSlot if none.
  /// (Always inlined: the hinted fast paths' search, placeBeside.)
  [[gnu::always_inline]] static unsigned findBeside(const SlotPage *pg, unsigned i, unsigned reach,
                                                    bool up_first) {
    if ((reach & (reach - 1)) == 0) { // (16, 32, 64 and 128-byte classes: aligned cells)
      const unsigned j = pg->findInCell(i, reach, up_first);
      if (j != kNoSlot)
        return j;
    }
    return pg->findBeside(i, reach, up_first);
  }

  /// A free slot of pg in the aligned group of g slots that holds
  /// anchor's slot (its grown cell: takeCell), the first above anchor's
  /// if there is one, else the first of the group; nullptr if none.
  void *takeInGroup(SlotPage *pg, const void *anchor, unsigned g) {
    const unsigned i = slotOf(pg, anchor), lo = i / g * g;
    const unsigned hi = lo + g < pg->slots ? lo + g : static_cast<unsigned>(pg->slots);
    unsigned j = pg->findInRange(i + 1, hi);
    if (j == kNoSlot)
      j = pg->findInRange(lo, i);
    return takeSlot(pg, j);
  }

  /// A free slot of pg in anchor's K-class, the first above anchor's slot
  /// if `up_first` and there is one (else the last below), or the mirror;
  /// nullptr if the class has none.
  void *takeInClass(SlotPage *pg, const void *anchor, bool up_first) {
    const unsigned i = slotOf(pg, anchor);
    const unsigned lo = firstSlotAt(pg, classStart(anchor)),
                   hi = firstSlotAt(pg, classEnd(anchor));
    unsigned j = up_first ? pg->findInRange(i + 1, hi) : (i > lo ? pg->findInRangeDown(lo, i) : kNoSlot);
    if (j == kNoSlot)
      j = up_first ? (i > lo ? pg->findInRangeDown(lo, i) : kNoSlot) : pg->findInRange(i + 1, hi);
    return takeSlot(pg, j);
  }

  /// The free slot of pg nearest anchor's (anywhere in the span); nullptr if
  /// pg is full.
  void *takeNearest(SlotPage *pg, const void *anchor, bool up_first) {
    return takeSlot(pg, pg->findNearest(slotOf(pg, anchor), up_first));
  }

  /// The next slot of c's run that grows `down` (or up), `stride` slots on
  /// from the last, opening a run if it has none or it is used up:
  /// contiguous memory in address order.
  /// `zone`: c is a tree's zone (hint_channel.cpp), whose runs are cut
  /// only from a span of their own, fresh or empty: a span with holes
  /// would interleave the zone's nodes with other zones' and containers'.
  /// The run's next slot is found inline (a masked tzcnt or lzcnt per word
  /// of the run); a new run is cut out of line (openRun).
  __attribute__((always_inline)) void *takeRun(ContainerSlot &c, unsigned cls, bool down,
                                               unsigned stride = 1, bool zone = false) {
    Run &r = down ? c.down : c.up;
    if (r.span && r.span->cls == cls) {
      const unsigned j = down ? r.span->findInRangeDown(r.lo, r.next)
                              : r.span->findInRange(r.next, r.hi);
      if (j != kNoSlot)
        return takeFromRun(r, j, down, stride);
    }
    return openRun(c, cls, down, stride, zone);
  }

  /// A tree zone's node whose place in the zone's key range is `frac`
  /// (1/65536ths, from its path below the zone's root: hint_channel.cpp):
  /// the free slot of c's run nearest the same fraction of the run, so
  /// that a run holds its nodes in about key order and an in-order walk
  /// reads each run's lines upwards; a new run when c's has none free.
  __attribute__((always_inline)) void *takeRunAt(ContainerSlot &c, unsigned cls, unsigned frac,
                                                 unsigned stride) {
    Run &r = c.up; // (one run a zone: the fraction orders both sides)
    if (r.span && r.span->cls == cls) {
      const unsigned j = nearestInRun(r, frac, stride);
      if (j != kNoSlot)
        return takeFromRun(r, j, false, stride);
    }
    return openRun(c, cls, false, stride, true, static_cast<int>(frac));
  }

  /// The free slot of run r nearest the fraction frac (1/65536ths) of its
  /// length, among every `stride`-th slot from r.lo (1 or 2: the others are
  /// left to nodes placed beside those); kNoSlot if none.
  static unsigned nearestInRun(const Run &r, unsigned frac, unsigned stride) {
    const unsigned t =
        r.lo + static_cast<unsigned>((static_cast<std::uint32_t>(r.hi - r.lo) * frac) >> 16);
    return r.span->findNearestInRange(r.lo, r.hi, t, stride);
  }

  /// takeRun's slow path: c's next run, cut and its first slot taken (with
  /// `frac` >= 0, the slot nearest that fraction of it: takeRunAt).
  __attribute__((noinline)) void *openRun(ContainerSlot &c, unsigned cls, bool down,
                                          unsigned stride, bool zone, int frac = -1) {
    Run &r = down ? c.down : c.up;
    // A new run starts at the first free slot of the run span's uncut
    // part on the run's side (nodes placed beside their neighbours may
    // have taken the slots next to it); a span with none gives way to a
    // mostly free or a fresh one.
    const bool small = c.runs < kSmallRuns;
    const unsigned kind = zone ? 2 : small;
    SlotPage *&run_span = run_[kind][down][cls];
    SlotPage *rp = run_span;
    unsigned j = rp ? uncutSlot(rp, down) : kNoSlot;
    if (j == kNoSlot) {
      // A run of a class that freed at least half as many blocks as the
      // last such run span held (a container erased from and inserted into
      // at its size) takes an Empty span, else the emptiest of up to
      // kChurnScan Avail spans if it is at most three quarters used (the
      // holes the erased nodes left), before a fresh one; a zone's too. A
      // queue's spans come back whole (Empty: no scan); a tree's or a hash
      // table's erased nodes leave holes. container_churn_plugin (200,000
      // entries, a tenth replaced a round), footprint at 10 and 100 rounds
      // without this: std::set 16.0 and 35.0 MB, std::map 20.2 and 106.4,
      // std::unordered_map 9.7 and 22.1.
      const std::uint64_t frees = this->freesOf(cls);
      const bool churn = rp && (frees - run_frees_[kind][down][cls]) * 2 >= rp->slots;
      if (rp) {
        retireRun(rp);
        run_span = nullptr; // (retired once: it is on a list now)
      }
      // (A zone's run takes a wholly free span of its class, never one
      // with live blocks: zones' spans hold zone runs only, but while the
      // class churns.)
      // (A small run of an overgrown class takes holes before a whole
      // span.)
      rp = churn  ? this->takeMostlyFree(cls, 3, false, kChurnScan)
           : zone ? this->takeEmpty(cls)
                  : this->takeMostlyFree(cls, small ? 3 : 1, small && overgrown(cls));
      if (!rp) {
        this->reclaimIfGrowing(cls);
        rp = this->takeOtherEmptyOrCarve(cls);
      }
      if (!rp)
        return nullptr;
      rp->state = SpanState::Run;
      rp->run_cursor = 0;
      rp->run_top = static_cast<std::uint16_t>(rp->slots);
      run_span = rp;
      run_frees_[kind][down][cls] = frees;
      j = uncutSlot(rp, down);
      if (j == kNoSlot) // (never: the span is at most a quarter used)
        return nullptr;
    }
    unsigned lo, hi;
    if (down) {
      hi = j + 1;
      lo = runStart(rp, hi, c.runs);
      rp->run_top = static_cast<std::uint16_t>(lo);
    } else {
      lo = j;
      hi = runEnd(rp, lo, c.runs);
      rp->run_cursor = static_cast<std::uint16_t>(hi);
    }
    if (c.runs < 255)
      ++c.runs;
    r = Run{rp, static_cast<std::uint16_t>(lo), static_cast<std::uint16_t>(hi),
            static_cast<std::uint16_t>(down ? hi : lo)};
    if (frac >= 0) // (slot j, r.lo, is free: never kNoSlot)
      j = nearestInRun(r, static_cast<unsigned>(frac), stride);
    return takeFromRun(r, j, down, stride);
  }

  /// A list's first node (the list was empty): the first of g free slots
  /// in a row, g = ceil(128 / slot size) (two cache lines, aligned for the
  /// 16, 32 and 64-byte classes; 4 for the 24-byte one), which become c's
  /// run: its next nodes go beside it. Cut from the uncut part of the
  /// class's cell span (cell_),
  /// else from an Avail span that has a free cell (SpanHeap::takeWithGroup),
  /// else an empty or a fresh span; the slots of a cell that is
  /// not all free are never cut again for another list, so a list's cell
  /// waits for its next nodes however long they take (debruijn_net's
  /// lists get their second node a quarter of the build later). The span
  /// is marked as one that holds cells (SlotPage::cells).
  /// `bytes` = kGrownCellBytes: the grown cell of a list whose cell is
  /// full (hint_channel.cpp), ceil(512 / slot size) slots, at most a word's.
  static constexpr unsigned kCellBytes = 128, kGrownCellBytes = 512;
  /// (The 24-byte node class: a cell of 4 slots, aligned as a power of two
  /// is, so 96 bytes from a multiple of 96 past slot 0, which lies on a
  /// line: a list's first four nodes in two lines, and lists of four leave
  /// no slot of their cells free. Its former cells of 4 or 5 slots, each
  /// in an aligned pair of lines, left 4 of every 16 slots free under
  /// lists of four: debruijn_net_plugin's footprint after its build 11.6
  /// -> 9.6 MB, its instructions -1.3%, L1d misses -4.2%, L2 misses -7.0%
  /// (cachegrind), and faster in six alternated runs of six. A grown cell
  /// is 16 slots, 384 bytes.)
  static constexpr unsigned cellSlots(unsigned cls, unsigned bytes) {
    if (cls == kbit::kNodeClass24)
      return bytes <= kCellBytes ? 4 : 16;
    const unsigned g = (bytes + kbit::kClassBytes[cls] - 1) / kbit::kClassBytes[cls];
    return g < kWordBits ? g : kWordBits;
  }
  void *takeCell(ContainerSlot &c, unsigned cls, unsigned bytes = kCellBytes) {
    const unsigned g = cellSlots(cls, bytes);
    ++cells_asked_[cls];
    SlotPage *&cell_span = cell_[cls];
    SlotPage *rp = cell_span;
    unsigned j = rp ? rp->findFreeGroup(rp->run_cursor, rp->run_top, g) : kNoSlot;
    if (j == kNoSlot) {
      // While the class churns, a cell takes no span that would grow the
      // heap: a group of an Avail span's, kept apart (the cell span stays),
      // else an Empty span of the class, else none, and the node takes a
      // hole (md_cells's particles move from list to list for as long as
      // it runs: with a fresh cell for each, its peak RSS grew to 60.9 MB
      // at 20 steps and 88.8 MB at 200; 56.8 and 57.4 MB with this rule).
      // And while the class is overgrown, a cell takes no whole span at
      // all, and a look for a group that found none is not made again for
      // the next 2^misses - 1 cells (up to 63): their nodes take holes
      // (debruijn_net_plugin, a look at every cell: 1,761 -> 2,248 M
      // instructions, a quarter of them in findFreeGroup).
      const bool spread = overgrown(cls);
      if (!spread) // (skips count down only while overgrown: cellSkipped)
        group_skip_[cls] = 0;
      const bool churn = !growing(cls) || spread;
      const bool look = !spread || group_skip_[cls] == 0;
      if (!look)
        --group_skip_[cls];
      if (churn && look) {
        if (SlotPage *q = this->takeWithGroup(cls, g, j)) {
          group_misses_[cls] = 0;
          void *p = openCell(c, q, j, g, bytes);
          retireRun(q);
          return p;
        }
        if (spread) {
          if (group_misses_[cls] < 6)
            ++group_misses_[cls];
          group_skip_[cls] = static_cast<std::uint8_t>((1u << group_misses_[cls]) - 1);
        }
      }
      if (rp)
        retireRun(rp);
      rp = churn ? nullptr : this->takeWithGroup(cls, g, j);
      if (!rp) {
        j = 0;
        rp = spread ? nullptr : this->takeEmpty(cls);
        if (!rp && !churn) {
          this->reclaimIfGrowing(cls);
          rp = this->takeOtherEmptyOrCarve(cls);
        }
      }
      cell_span = rp;
      if (!rp)
        return nullptr;
      rp->state = SpanState::Run;
      rp->run_cursor = 0;
      rp->run_top = static_cast<std::uint16_t>(rp->slots);
    }
    if (j + g > rp->run_cursor)
      rp->run_cursor = static_cast<std::uint16_t>(j + g);
    return openCell(c, rp, j, g, bytes);
  }

  /// Whether takeCell(c, cls) would give no cell now, without a look: the
  /// class's cell span is spent, it was overgrown at its last look for a
  /// group, and that look's skips (group_skip_) are not all taken. Takes
  /// one as takeCell would. Two loads: a list's first node then takes
  /// malloc's slot without takeCell's call and its overgrown() test
  /// (mallocListFirst; cppcheck, whose class of 64 bytes stays overgrown,
  /// made 470,000 such calls of about 270 instructions each). Should the
  /// class stop being overgrown meanwhile, at most 63 more nodes take
  /// malloc's slot before the next look.
  bool cellSkipped(unsigned cls) {
    if (cell_[cls] != nullptr || group_skip_[cls] == 0)
      return false;
    --group_skip_[cls];
    ++cells_asked_[cls];
    return true;
  }

  /// This thread's record of container c; nullptr if the table cannot be
  /// mapped.
  __attribute__((always_inline)) ContainerSlot *container(const void *c) {
    if (__builtin_expect(!containers_.ready(), 0))
      return nullptr;
    return &containers_.find(c);
  }

  /// The zones' entries of tree entry t (ContainerTable::zones).
  ContainerSlot *zones(ContainerSlot &t) { return containers_.zones(t); }

  /// Forgets every container (the heap changes thread).
  void forgetContainers() { containers_.forget(); }

  unsigned k() const { return this->k_; }

  /// Whether a and b (both in the window) lie in one K-class.
  bool sameClass(const void *a, const void *b) const {
    const std::uintptr_t x = reinterpret_cast<std::uintptr_t>(a),
                         y = reinterpret_cast<std::uintptr_t>(b);
    if (__builtin_expect(this->class_shift_ <= PageArena::kBaseAlignShift, 1))
      return ((x ^ y) >> this->class_shift_) == 0; // the window starts on a class
    const std::uintptr_t base = PageArena::get().base();
    return ((x - base) >> this->class_shift_) == ((y - base) >> this->class_shift_);
  }

  /// The first address of the K-class of p (in the window).
  std::uintptr_t classStart(const void *p) const {
    if (this->class_shift_ >= 40)
      return 0;
    const std::uintptr_t base = PageArena::get().base();
    return (((reinterpret_cast<std::uintptr_t>(p) - base) >> this->class_shift_)
            << this->class_shift_) +
           base;
  }
  /// The first address past the K-class of p (in the window).
  std::uintptr_t classEnd(const void *p) const {
    if (this->class_shift_ >= 40)
      return ~std::uintptr_t{0};
    const std::uintptr_t base = PageArena::get().base();
    return ((((reinterpret_cast<std::uintptr_t>(p) - base) >> this->class_shift_) + 1)
            << this->class_shift_) +
           base;
  }

private:
  /// Makes slots j .. j + g - 1 of sp, all free, c's cell of `bytes` (c's
  /// run) and takes its first.
  void *openCell(ContainerSlot &c, SlotPage *sp, unsigned j, unsigned g, unsigned bytes) {
    sp->cells = true;
    // (The container's next run, if it gets one, is twice this cell.)
    c.runs = bytes > kCellBytes ? 3 : 1;
    c.cell = 1;
    c.up = Run{sp, static_cast<std::uint16_t>(j), static_cast<std::uint16_t>(j + g),
               static_cast<std::uint16_t>(j)};
    return takeFromRun(c.up, j, false, 1);
  }

  void *takeFromRun(Run &r, unsigned j, bool down, unsigned stride) {
    r.span->take(j);
    notePlaced(r.span);
    this->count.allocs[r.span->cls].add(1);
    // Up: the next search starts `stride` above j; down: it ends
    // `stride - 1` below j (the slots between stay free for later
    // neighbours).
    r.next = static_cast<std::uint16_t>(down ? (j + 1 > stride ? j + 1 - stride : 0) : j + stride);
    return r.span->address(j);
  }

  void retireRun(SlotPage *rp) {
    if (rp->hasRoom())
      this->pushAvail(rp);
    else
      rp->state = SpanState::Full;
  }

  /// The first slot of pg starting at or above address a (pg->slots if
  /// none).
  static unsigned firstSlotAt(const SlotPage *pg, std::uintptr_t a) {
    if (a <= pg->start)
      return 0;
    const std::uintptr_t i = (a - pg->start + pg->slot_bytes - 1) / pg->slot_bytes;
    return i < pg->slots ? static_cast<unsigned>(i) : pg->slots;
  }

  /// The free slot of rp's uncut part [run_cursor, run_top) nearest its
  /// top (`down`) or its bottom; kNoSlot if none.
  static unsigned uncutSlot(const SlotPage *rp, bool down) {
    return down ? rp->findInRangeDown(rp->run_cursor, rp->run_top)
                : rp->findInRange(rp->run_cursor, rp->run_top);
  }

  /// Bytes of a container's `runs`-th run: kFirstRunBytes << runs.
  static std::uintptr_t runBytes(unsigned runs) {
    return runs >= 24 ? ~std::uintptr_t{0} : kFirstRunBytes << runs;
  }

  /// End of a container's run cut upwards from slot lo when it is the
  /// container's `runs`-th: runBytes(runs), at least one slot, never past
  /// the end of lo's K-class nor into the slots cut from the top.
  unsigned runEnd(const SlotPage *rp, unsigned lo, unsigned runs) const {
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(rp->address(lo));
    const std::uintptr_t class_end = classEnd(rp->address(lo));
    const std::uintptr_t want = a + runBytes(runs) < a ? ~std::uintptr_t{0} : a + runBytes(runs);
    const std::uintptr_t end = want < class_end ? want : class_end;
    unsigned hi = static_cast<unsigned>((end - rp->start + rp->slot_bytes - 1) / rp->slot_bytes);
    if (hi <= lo)
      hi = lo + 1;
    return hi < rp->run_top ? hi : rp->run_top;
  }

  /// Start of a container's run cut downwards ending at slot hi (the
  /// slots below hi are uncut) when it is the container's `runs`-th: the
  /// mirror of runEnd (never below the K-class of slot hi - 1 nor into the
  /// slots cut from the bottom).
  unsigned runStart(const SlotPage *rp, unsigned hi, unsigned runs) const {
    const std::uintptr_t class_start = classStart(rp->address(hi - 1));
    const std::uintptr_t end = reinterpret_cast<std::uintptr_t>(rp->address(hi));
    const std::uintptr_t bytes = runBytes(runs);
    const std::uintptr_t want = end - rp->start < bytes ? rp->start : end - bytes;
    std::uintptr_t from = want > class_start ? want : class_start;
    if (from < rp->start)
      from = rp->start;
    unsigned lo = static_cast<unsigned>((from - rp->start + rp->slot_bytes - 1) / rp->slot_bytes);
    if (lo >= hi)
      lo = hi - 1;
    return lo > rp->run_cursor ? lo : rp->run_cursor;
  }

  /// Per kind of run (0 a container's runs from its kSmallRuns-th on, 1 its
  /// first ones, 2 a tree's zones'), direction (0 up, 1 down) and size
  /// class, the span runs are cut from: a container's consecutive runs of
  /// one direction lie end to end in it, not between the other direction's,
  /// and a small container's runs fill the holes of spans up to three
  /// quarters used while a growing container's come from spans at most a
  /// quarter used, and zones' from fresh or empty spans only.
  SlotPage *run_[3][2][kClasses] = {};
  /// The class's frees (freesOf) when each of run_ was taken; how many
  /// Avail spans a churning class's run looks at.
  std::uint64_t run_frees_[3][2][kClasses] = {};
  static constexpr unsigned kChurnScan = 256;
  /// Whether lists' cells of class cls are being filled, not replaced: the
  /// class's frees by this thread since the last verdict were at most an
  /// eighth of the cells asked for since (a build: debruijn_net's and
  /// md_cells's lists while they are filled, with no free; md_cells's
  /// particles moving between lists free one node for each they insert),
  /// or the last verdict while fewer than kGrowthWindow of both came
  /// since. O(1); once per cell span taken at most.
  static constexpr std::uint64_t kGrowthWindow = 16;
  bool growing(unsigned cls) {
    const std::uint64_t f = this->freesOf(cls);
    const std::uint64_t dc = cells_asked_[cls] - cells_asked_then_[cls], df = f - cell_frees_[cls];
    if (dc + df >= kGrowthWindow) {
      cell_churning_[cls] = df * 8 > dc;
      cells_asked_then_[cls] = cells_asked_[cls];
      cell_frees_[cls] = f;
    }
    return !cell_churning_[cls];
  }

  /// Whether the class's spans hold more than an eighth more slots than
  /// the most this thread ever held taken (SpanHeap::peakTaken), and two
  /// spans more: its blocks were freed in place of others placed in whole
  /// spans, and its free slots lie scattered among live ones. Then a
  /// list's cell, and a small container's run, take no whole span (Empty
  /// or fresh): a cell takes a group of an Avail span's, else its node a
  /// hole; a small run the emptiest of the first kRunScan Avail spans if
  /// it is at most three quarters used, before an Empty one. Whole spans
  /// stay for the runs of long containers, whose memory comes back whole
  /// (a queue's); a build, whose taken slots are at their high, is not
  /// touched. Without this, a program that clears lists and fills others
  /// in their place (debruijn_net's failed and repaired nodes) moved its
  /// lists into whole spans round after round and left their old cells
  /// free: its footprint grew by about a span a round, without bound (8.6
  /// MB live: 12.5 MB at 10 rounds, 25.3 MB at 200; with this and the
  /// 24-byte class's cells of four, 10.3 MB at 10 and at 100; with a third
  /// more instead of an eighth, 10.6 and 11.7). O(1): counters; once per
  /// cell span or small run's span taken, and per cell while overgrown.
  static constexpr unsigned kGrowthSlack = 2;
  bool overgrown(unsigned cls) {
    const std::uint64_t taken = this->noteTaken(cls), peak = this->peakTaken(cls);
    if (taken == peak)
      return false;
    return this->heldSlots(cls) > peak + peak / 8 + kGrowthSlack * Super::kSlotsPerSpan[cls];
  }

  /// Per size class, the span lists' cells are cut from (takeCell), the
  /// cells asked for ever, and growing's last verdict with the cells
  /// asked for and the class's frees then.
  SlotPage *cell_[kClasses] = {};
  std::uint64_t cells_asked_[kClasses] = {}, cells_asked_then_[kClasses] = {},
                cell_frees_[kClasses] = {};
  bool cell_churning_[kClasses] = {};
  /// Per size class, takeCell's looks for a group that found none in a
  /// row, and the cells still to come before the next look.
  std::uint8_t group_misses_[kClasses] = {}, group_skip_[kClasses] = {};
  ContainerTable containers_;
};

} // namespace defero::pages
