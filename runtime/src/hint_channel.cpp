// hint_channel.cpp - the hint channel's slow path: the hint ABI's calls
// that find no heap yet, the one-shot hint's malloc (mallocFull: a
// continuation of the thread's recent node, else placeBeside, else the
// full placement; about 60 instructions more than a plain malloc,
// pair_cost 140.9 a pair against 71.1), container policies, the C API's
// placement calls (defero_alloc_near, defero_alloc_path), and
// ProcessHeap::hinted, which places a hinted block when placeBeside
// (process_heap.h) could not.
//
// Cost: a container-table lookup (open addressing, one probe usually), the
// policy's epoch check, the beside search again after an uncache, then a
// run (contiguous memory for the container) or an unhinted slot.
#include <array>
#include <cstdio>
#include <cstring>

#include "node_layout.h"
#include "process_heap.h"

namespace defero {

namespace {
// Tree nodes placed in a run leave a free slot after each: the children
// that later hang under a node find room beside it, so subtrees stay in the
// same lines (set of 1M after churn, stride 1 -> 2: for_each 159 -> 115
// ns, find 440 -> 310 ns, footprint +13%; 3 and 4 gain less than they
// cost in memory).
constexpr unsigned kTreeRunStride = 2;

// A large tree's subtrees fill runs of their own (zones): the nodes whose
// paths from the root begin with the same zoneBits steps share a zone's
// runs, cut from spans that hold zone runs only. An in-order walk finishes
// one subtree before the next, so it reads each zone's pages while they
// are in the cache and the TLB (Chilimbi's subtree clustering, from the
// path the Defero paper's Path predicate reads). A set of 3M nodes after
// churn, for_each: 122 -> 72-76 ns a node (256 zones, runs filled in
// insertion order).
//
// Within a run, a node takes the free slot nearest its place in the
// zone's key range (its path below the zone's root read as a binary
// fraction: takeRunAt), every other slot (kTreeRunStride), so that a run
// holds its nodes in about key order and the walk reads each run's lines
// upwards, a stream the hardware prefetches, where insertion order made
// every line a wait of its own. With 1,024 zones at most (a zone's nodes
// in fewer runs: fewer streams at once) and runs of up to 8 KiB, the 3M
// set's walk 83 -> 52 ns a node (tw2, three alternated runs: 84.1, 80.0,
// 84.3 against 50.4, 53.5, 51.9; 1,024 zones in insertion order 74, the
// fraction with 256 zones 67); its finds as before (the cache model of
// tree_model: 1,353 -> 1,351 cycles), its build 647 -> 675 instructions
// an insert (callgrind, 200K), its footprint +0.4%.
//
// A tree has 2^(d - kZoneDepthOffset) zones, up to 2^kMaxZoneBits, where d
// is the deepest insert this thread saw (a red-black tree of n nodes is
// log2 n to 2 log2 n deep): none in a tree up to 14 deep (a few thousand
// nodes), 256 in one 22 deep (tens of thousands), 1,024 from 24 deep. A
// zone's runs double from 128 bytes up to 128 << kZoneRunLevel (8 KiB:
// the zones' open runs stay small beside the tree: a 60,000-node set
// spans 865 pages against 805 without zones, and each subtree of 1/64 of
// it 124 of them against 381).
constexpr unsigned kZoneDepthOffset = 14;
constexpr unsigned kMaxZoneBits = 10;
constexpr unsigned kZoneRunLevel = 6;
// A zone's entry is (1 << bits) | zone, below 2 << kMaxZoneBits.
static_assert((2u << kMaxZoneBits) <= pages::ContainerTable::kZoneSlots,
              "the zones' array holds every zone's entry");

/// How many leading steps of a node's path name its zone in a tree whose
/// deepest insert seen was `depth` levels down (0: the tree's own runs).
constexpr unsigned zoneBits(unsigned depth) {
  return depth <= kZoneDepthOffset ? 0
         : depth - kZoneDepthOffset < kMaxZoneBits ? depth - kZoneDepthOffset
                                                  : kMaxZoneBits;
}
static_assert(zoneBits(14) == 0 && zoneBits(15) == 1 && zoneBits(64) == kMaxZoneBits);

/// Each byte with its bits in reverse order (a zone's node's steps read as
/// a binary fraction: takeInZone).
constexpr auto kReversedByte = [] {
  std::array<std::uint8_t, 256> t{};
  for (unsigned b = 0; b < 256; ++b)
    for (unsigned i = 0; i < 8; ++i)
      t[b] |= static_cast<std::uint8_t>(((b >> i) & 1) << (7 - i));
  return t;
}();
static_assert(kReversedByte[1] == 0x80 && kReversedByte[0x0F] == 0xF0);

/// A tree node under `anchor`, its parent (left: its left child), in the
/// zone of its path, when the tree has zones: the slot of the zone's run
/// at its place in the zone's key range (the zone's entry among the
/// tree's, ContainerTable::zones). nullptr:
/// the tree's own runs take it (a tree with no zones yet, a node above the
/// zones' depth, an anchor that is not a node of the tree). cs is the
/// tree's entry.
DEFERO_ALWAYS_INLINE void *takeInZone(LocalHeap *h, pages::ContainerSlot *cs, unsigned cls,
                                      const void *container, const void *anchor, bool left) {
  std::uint64_t steps;
  unsigned depth;
  if (!treePath(anchor, container, steps, depth) || depth >= 63)
    return nullptr;
  if (depth + 1 > cs->depth)
    cs->depth = static_cast<std::uint8_t>(depth + 1);
  const unsigned bits = zoneBits(cs->depth);
  if (bits == 0 || depth + 1 < bits)
    return nullptr;
  // The new node's path (its step below the anchor is the deepest), and
  // its zone's: the first `bits` steps from the root, the lowest bits.
  const std::uint64_t path = steps | std::uint64_t{left ? 0u : 1u} << depth;
  const std::uint64_t zone = path & ((std::uint64_t{1} << bits) - 1);
  pages::ContainerSlot *zs = h->zones(*cs);
  if (!zs) // (no memory for them: the tree's own runs)
    return nullptr;
  pages::ContainerSlot &z = zs[(1u << bits) | zone];
  if (z.runs > kZoneRunLevel)
    z.runs = static_cast<std::uint8_t>(kZoneRunLevel);
  // The node's place in its zone's key range: its steps below the zone's
  // root read as a binary fraction (left 0, right 1), the node itself
  // halfway down what is left (15 steps at most).
  const unsigned below = depth + 1 - bits;
  const unsigned steps15 = static_cast<unsigned>(path >> bits) & 0x7FFF;
  const unsigned frac = (static_cast<unsigned>(kReversedByte[steps15 & 0xFF]) << 8 |
                         kReversedByte[steps15 >> 8]) |
                        1u << (15 - (below < 15 ? below : 15));
  return h->takeRunAt(z, cls, frac, kTreeRunStride);
}
} // namespace

void *ProcessHeap::allocNear(std::size_t sz, const void *hint) {
  LocalHeap *h = heapDroppingHint();
  if (!h)
    return nullptr;
  if constexpr (kRealtimeBuild) {
    if (realtime()) // the buddy policy has no placement to steer
      return realtimeMalloc(h, sz, PendingHint{});
  }
  if (sz > kMaxSmall)
    return mallocLarge(h, sz, os::kPageBytes, nullptr);
  const unsigned cls = kbit::classOf(sz + kCanaryBytes);
  void *p = nullptr;
  if (SlotPage *pg = h->mySpan(hint, cls))
    p = h->takeNearest(pg, hint, true);
  if (!p)
    p = h->malloc(cls);
  if (!p)
    return mallocLarge(h, sz, os::kPageBytes, nullptr);
  finishSmall(h, p, cls);
  traceMalloc(p, sz);
  return p;
}

void *ProcessHeap::allocPath(std::size_t sz, std::uint64_t bits, unsigned depth) {
  // Under runtime v2 the path bits do not steer placement (defero.h): an
  // unhinted block, as defero_alloc_near gives without an anchor.
  (void)bits;
  (void)depth;
  return allocNear(sz, nullptr);
}

// --- hints ------------------------------------------------------------------

/// Places a small block of class cls that carries a hint, under the
/// container's policy: beside the anchor (the neighbour, the parent on the
/// side of the insert, or the thread's last node of the container) if a
/// slot within a line or two of it is free; else, for the first node of an
/// empty list, a cell of two lines of its own (takeCell); else, for a
/// neighbour or container hint that hops from another container under
/// Auto, a grown cell if its anchor lies among lists' cells, else malloc's
/// slot (hopsContainers; a container hint's leaves the
/// thread's recent node as it was); else, for a list with no run yet, a free slot in the
/// anchor's K-class; else the next slot of the container's run; else, for
/// a container that has no run yet and no anchor here, an unhinted slot.
void *ProcessHeap::hinted(LocalHeap *h, std::size_t sz, unsigned cls,
                          const PendingHint &hint) {
  pages::ContainerSlot *cs = h->container(hint.container);
  if (!cs) // no memory for the table: an unhinted block
    return h->malloc(cls);
  if (registry_.used() && cs->epoch != registry_.epoch()) {
    ContainerRegistry::Entry e;
    const bool known = hint.container && registry_.lookup(hint.container, e);
    cs->policy = known ? e.policy : -1;
    cs->k = known ? e.k : 0;
    cs->epoch = registry_.epoch();
  }
  const Predicate pred = cs->policy >= 0 ? static_cast<Predicate>(cs->policy) : cfg_.policy;
  // Under Auto, a neighbour hint that hops from another container takes
  // malloc's slot when it finds no room beside its anchor (hopsContainers).
  const bool hop = pred == Predicate::Auto && hopsContainers(h, hint.kind, hint.container);
  const void *anchor = hint.where;
  if (hint.kind == kHintContainer) {
    // The node this thread placed last, if it was for this container (an
    // insert after an insert); a remembered anchor, not one the program
    // named, so only while it is live (a node of an earlier container at
    // the same address, since freed, anchors nothing).
    anchor = hint.container == h->recent.container ? h->recent.node : nullptr;
    if (anchor && !h->holdsLive(anchor))
      anchor = nullptr;
  }
  // An anchor inside the container object itself is its header: the
  // container is empty (or inserting at its end sentinel). A container
  // that is empty starts afresh, whatever an earlier container at the same
  // address left in the table (so placement never depends on which
  // addresses a program's containers happen to reuse).
  // A list's cell is its own: a container of another kind at the same
  // address later (a hashtable or a tree built where the list was) does
  // not continue it.
  const bool fresh = inContainer(anchor, hint.container) ||
                     (hint.kind == kHintNeighbor && anchor == nullptr);
  if (fresh || (cs->cell && hint.kind != kHintNeighbor)) {
    cs->cell = 0;
    cs->up = pages::Run{};
    cs->down = pages::Run{};
    cs->runs = 0;
    if (h->recent.container == hint.container)
      h->noteRecent(hint.container, nullptr, nullptr, 0, 0);
  }
  void *p = nullptr;
  bool searched = hint.searched;
  if (pred != Predicate::First && !hop && h->stacked(cls)) {
    // The placement searches the spans' bitmaps: the blocks this thread
    // freed onto its stack of the class go back to them first.
    h->flushStack(cls, 0);
    searched = false;
  }
  if (pred != Predicate::First) {
    // A node that goes before its anchor in the container's order goes
    // below it, others above: in-order and list order walk up the
    // addresses.
    SlotPage *pg = h->mySpan(anchor, cls);
    const bool down = pg && linksBefore(PendingHint{hint.kind, hint.side, hint.container, anchor});
    if (pg && !searched) // (else the inline path found no room there)
      p = h->takeBeside(pg, anchor, LocalHeap::lineReach(cls), !down);
    // A list this thread has no run for (new, or forgotten with the
    // table: many small lists) takes a hole in its anchor's K-class before
    // a run of its own is cut (debruijn_net_plugin: peak footprint 13.3 ->
    // 12.7 MB, md_cells_plugin 52.9 -> 50.8 MB, the list kernel's layout
    // unchanged). Trees keep their runs: a hole costs set find 1.6% more
    // L1 misses.
    if (!p && !hop && pg && cs->runs == 0 && hint.kind != kHintTree)
      p = h->takeInClass(pg, anchor, !down);
    if (!p && pg && hint.kind == kHintTree) {
      p = takeInZone(h, cs, cls, hint.container, anchor, down);
    }
    // A list's first node opens a cell of its own (two cache lines), hop
    // or not: its next nodes go beside it.
    if (!p && fresh && hint.kind == kHintNeighbor && namesEmptyContainer(anchor, hint.container))
      p = h->takeCell(*cs, cls);
    // A list filled in turn with others whose tail has no room beside it
    // and lies among lists' cells (it began in one: SlotPage::cells) takes
    // a free slot of the tail's own grown cell (512 bytes), else opens a
    // grown cell for its next nodes, not malloc's slot: md_cells's 25,000
    // lists of about eight 64-byte particles, filled one particle a list
    // in turn, had 7.8% of their links within 128 bytes (a first cell
    // holds two), 83% now. While the class churns, a cell comes only from
    // holes that leave one free (PlacementLayer::growing), and without one
    // the node takes malloc's slot. debruijn_net's lists of four ints fit
    // their first cell: unchanged.
    if (!p && hop && pg && pg->cells && !down && hint.kind == kHintNeighbor) {
      p = h->takeInGroup(pg, anchor, LocalHeap::cellSlots(cls, LocalHeap::kGrownCellBytes));
      if (!p)
        p = h->takeCell(*cs, cls, LocalHeap::kGrownCellBytes);
    }
    if (!p && !hop && (pg || (down ? cs->down.span : cs->up.span)))
      p = h->takeRun(*cs, cls, down, hint.kind == kHintTree ? kTreeRunStride : 1);
  }
  // malloc's slot (its free stack first; the node class's by h->malloc,
  // which takes its free stack first too)
  if (!p && hop && tls.fast == h && !kbit::isNodeClass(cls))
    p = mallocFast(sz);
  if (!p)
    p = h->malloc(cls);
  if (!p)
    return nullptr;
  if (hop && hint.kind == kHintContainer) // (the recent node stays: hopsContainers)
    noteHop(h, hint.container);
  else
    noteRecentBlock(h, hint.container, p, sz, hint.kind - 1u);
  countHinted(h, *cs, anchor, p);
  h->notePlacedBytes(kbit::kClassBytes[cls]);
  return p;
}

DEFERO_ALWAYS_INLINE void ProcessHeap::countHinted(LocalHeap *h, const pages::ContainerSlot &cs,
                                                   const void *anchor, const void *p) {
  if (cs.policy >= 0) // placed by its policy: no continuation on the fast path
    h->recent.size = ~std::size_t{0};
  h->count.hinted_allocs.add(1);
  if (cs.policy >= 0)
    h->count.policy_allocs.add(1);
  // "Same class" at the container's own K if it set one, else the
  // heap's (the process's: a shift and a compare; an anchor out of the
  // window, or none, is in no class of p's).
  if (__builtin_expect(cs.k == 0, 1)) {
    h->count.hint_same_class.add(h->sameClass(anchor, p));
    return;
  }
  PageArena &a = PageArena::get();
  if (anchor && a.inWindow(anchor) &&
      ((reinterpret_cast<std::uintptr_t>(anchor) - a.base()) >> (32 - cs.k)) ==
          ((reinterpret_cast<std::uintptr_t>(p) - a.base()) >> (32 - cs.k)))
    h->count.hint_same_class.add(1);
}

void *ProcessHeap::mallocTreeOpen(LocalHeap *h, std::size_t sz, const void *container,
                                  const void *anchor, bool left) {
  const unsigned cls = fusedClassOf(sz);
  pages::ContainerSlot *cs = h->container(container);
  // What hinted() would do otherwise: a pending one-shot hint to drop, a
  // class whose free stack goes back to the bitmaps first, a container
  // with a policy (or one to read), a tree that began as a list's cell, an
  // anchor in the container object (an empty tree).
  if (__builtin_expect(!cs || h->hint.kind != kHintNone || h->stacked(cls) || cs->cell ||
                           cs->policy >= 0 ||
                           (registry_.used() && cs->epoch != registry_.epoch()) ||
                           inContainer(anchor, container),
                       0))
    return mallocHintedOpen(
        h, sz, PendingHint{kHintTree, static_cast<std::int8_t>(left), container, anchor, 1});
  void *p = takeInZone(h, cs, cls, container, anchor, left);
  if (!p)
    p = h->takeRun(*cs, cls, left, kTreeRunStride);
  return endOpen(h, sz, cls, *cs, container, anchor, p, kHintTree - 1u);
}

DEFERO_ALWAYS_INLINE void *ProcessHeap::endOpen(LocalHeap *h, std::size_t sz, unsigned cls,
                                                const pages::ContainerSlot &cs,
                                                const void *container, const void *anchor,
                                                void *p, unsigned row) {
  if (!p)
    p = h->malloc(cls);
  if (__builtin_expect(!p, 0)) // the small-object window is full
    return mallocLarge(h, sz, os::kPageBytes, nullptr);
  noteRecentBlock(h, container, p, sz, row);
  countHinted(h, cs, anchor, p);
  h->notePlacedBytes(kbit::kClassBytes[cls]);
  finishSmall(h, p, cls);
  return p;
}

void *ProcessHeap::mallocListFirst(LocalHeap *h, std::size_t sz, const void *container,
                                   const void *anchor) {
  const unsigned cls = fusedClassOf(sz);
  pages::ContainerSlot *cs = h->container(container);
  const bool hop = g_auto_default && hopsContainers(h, kHintNeighbor, container);
  const SlotPage *at = anchor ? PageArena::get().spanOf(anchor) : nullptr;
  // What hinted() would do otherwise: a pending one-shot hint to drop, a
  // container with a policy (or one to read), a class whose free stack
  // goes back to the bitmaps first, a header in a block of h's of the
  // node's class (a hole beside it, or in its K-class, comes first).
  if (__builtin_expect(!cs || h->hint.kind != kHintNone || cs->policy >= 0 ||
                           (registry_.used() && cs->epoch != registry_.epoch()) ||
                           (!hop && h->stacked(cls)) ||
                           (at && at->owner == h && at->cls == cls),
                       0))
    return mallocHintedOpen(h, sz, PendingHint{kHintNeighbor, 0, container, anchor, 0});
  // An empty container starts afresh (hinted()'s `fresh`).
  cs->cell = 0;
  cs->up = pages::Run{};
  cs->down = pages::Run{};
  cs->runs = 0;
  if (h->recent.container == container)
    h->noteRecent(container, nullptr, nullptr, 0, 0);
  void *p = h->cellSkipped(cls) ? nullptr : h->takeCell(*cs, cls);
  if (!p && hop && tls.fast == h) // malloc's slot (its free stack first)
    p = mallocNodeOr(sz, [](std::size_t) -> void * { return nullptr; });
  return endOpen(h, sz, cls, *cs, container, anchor, p, kHintNeighbor - 1u);
}

void *ProcessHeap::mallocContainerOpen(LocalHeap *h, std::size_t sz, const void *container) {
  const unsigned cls = fusedClassOf(sz);
  pages::ContainerSlot *cs = h->container(container);
  // What hinted() would do otherwise: a pending one-shot hint to drop, a
  // container with a policy (or one to read).
  if (__builtin_expect(!cs || h->hint.kind != kHintNone || cs->policy >= 0 ||
                           (registry_.used() && cs->epoch != registry_.epoch()),
                       0))
    return mallocHintedOpen(h, sz, PendingHint{kHintContainer, 0, container, nullptr, 0});
  if (cs->cell) { // (a list's cell, not this container's run)
    cs->cell = 0;
    cs->up = pages::Run{};
    cs->down = pages::Run{};
    cs->runs = 0;
  }
  if (h->stacked(cls))
    h->flushStack(cls, 0);
  void *p = cs->up.span ? h->takeRun(*cs, cls, false, 1) : nullptr;
  return endOpen(h, sz, cls, *cs, container, nullptr, p, kHintContainer - 1u);
}

// --- the one-shot hint's malloc -------------------------------------------------
//
// malloc's full path while a one-shot hint is pending (mallocRefill sends
// it here: the thread's fast path is closed, tls.fast is noFastHeap): a
// continuation of the thread's recent node, else placeBeside, else
// ProcessHeap::hinted through mallocSlow.

namespace {
/// malloc's slot for a one-shot hint's block once the hint is consumed
/// (tls.fast is h again): a node class's for operator new's node (kNode).
template <bool kNode> void *mallocSlot(std::size_t sz) {
  void *p = kNode ? mallocNodeOr(sz, [](std::size_t) -> void * { return nullptr; })
                  : mallocFast(sz);
  return p ? p : mallocSlowEntry(sz);
}

/// Under DEFERO_POLICY=first, a one-shot hint's malloc when no container
/// has a policy of its own: malloc's slot, counted as a hinted allocation
/// (ProcessHeap::hinted would give the same slot on its full path).
/// nullptr: no pending hint here, take the other paths.
template <bool kNode> void *mallocFirst(std::size_t sz) {
  LocalHeap *h = tls.heap;
  if (!h || h->hint.kind == kHintNone || !hintPoliciesUniform(h))
    return nullptr;
  const void *anchor = h->hint.kind == kHintContainer ? nullptr : h->hint.where;
  h->hint.kind = kHintNone;
  tls.fast = h; // (not diverted: hintPoliciesUniform)
  void *p = mallocSlot<kNode>(sz);
  if (p) {
    h->count.hinted_allocs.add(1);
    h->count.hint_same_class.add(anchor && h->sameClass(anchor, p));
  }
  return p;
}

/// A one-shot container hint that hops (hopsContainers) under Auto with
/// uniform policies: malloc's slot, counted as a hinted allocation (as the
/// fused entry's newHintedContainer).
template <bool kNode> void *mallocHop(LocalHeap *h, std::size_t sz) {
  noteHop(h, h->hint.container);
  h->hint.kind = kHintNone;
  tls.fast = h; // (not diverted: hintPoliciesUniform)
  void *p = mallocSlot<kNode>(sz);
  if (p)
    h->count.hinted_allocs.add(1);
  return p;
}

/// mallocFull once no one-shot hint continues the recent placement.
template <bool kNode> __attribute__((noinline)) void *mallocBeside(std::size_t sz) {
  if (!g_place_default)
    if (void *p = mallocFirst<kNode>(sz))
      return p;
  if (void *p = mallocHintedFast<kNode>(sz))
    return p;
  return mallocSlowEntry(sz, kNode);
}
} // namespace

// The hinted fast paths call nothing, so this needs no stack frame.
namespace {
/// The block a one-shot hint of kind `kind` continued the recent placement
/// with: the hint was counted when it was sent, and the streak counts it
/// again, so it is taken back; the hint is consumed.
DEFERO_ALWAYS_INLINE void *continued(LocalHeap *h, unsigned kind, void *p) {
  h->count.hints[kind - 1].add(~std::uint64_t{0});
  h->hint.kind = kHintNone;
  tls.fast = h;
  return p;
}

/// mallocFull for a pending hint of another kind than a neighbour's (or
/// none: kind 0, which placeAfterRecent declines).
template <bool kNode>
__attribute__((noinline)) void *mallocFullOther(LocalHeap *h, std::size_t sz) {
  const PendingHint &hint = h->hint;
  // A middle-sized block with the fast path open (nothing pending): the
  // mid heap's, as mallocSlow would give it, without the dispatch through
  // mallocBeside and mallocSlow (a 64 KiB malloc+free: about 120
  // instructions fewer).
  if (sz > kMidMin && sz <= kMidMax && tls.fast == h)
    if (void *p = processHeap().mallocMidOpen(h, sz))
      return p;
  void *p = placeAfterRecent<!kNode>(*tls.recent, sz, hint.kind, hint.container, hint.where,
                                     hint.side);
  if (!p) {
    if (hint.kind == kHintContainer && g_auto_default &&
        hopsContainers(h, hint.kind, hint.container) && hintPoliciesUniform(h))
      return mallocHop<kNode>(h, sz);
    return mallocBeside<kNode>(sz);
  }
  return continued(h, hint.kind, p);
}

/// mallocFull and mallocFullNode: a one-shot hint that continues the
/// thread's recent placement, else mallocBeside. A block for malloc (not
/// kNode) never continues in a node class (placeAfterRecent's kOneShot).
template <bool kNode> DEFERO_ALWAYS_INLINE void *mallocFullFor(std::size_t sz) {
  // (Policies need no check: see placeAfterRecent.)
  LocalHeap *h = tls.heap;
  if (!h)
    return mallocBeside<kNode>(sz);
  // A neighbour hint, the common case, with its kind and side as
  // constants (the other kinds' fields would cost two callee-saved
  // registers on its path).
  if (__builtin_expect(h->hint.kind != kHintNeighbor, 0))
    return mallocFullOther<kNode>(h, sz);
  void *p = placeAfterRecent<!kNode>(*tls.recent, sz, kHintNeighbor, h->hint.container,
                                     h->hint.where, 0);
  if (!p)
    return mallocBeside<kNode>(sz);
  return continued(h, kHintNeighbor, p);
}
} // namespace

void *mallocFull(std::size_t sz) { return mallocFullFor<false>(sz); }
void *mallocFullNode(std::size_t sz) { return mallocFullFor<true>(sz); }

void ProcessHeap::hintNeighbor(const void *c, const void *n) {
  if (LocalHeap *h = heap()) {
    h->count.hints[0].add(1);
    setHint(h, PendingHint{kHintNeighbor, 0, c, n});
  }
}
void ProcessHeap::hintTree(const void *c, const void *parent, int insert_left) {
  if (LocalHeap *h = heap()) {
    h->count.hints[1].add(1);
    setHint(h, PendingHint{kHintTree, static_cast<std::int8_t>(insert_left != 0), c, parent});
  }
}
void ProcessHeap::hintContainer(const void *c) {
  if (LocalHeap *h = heap()) {
    h->count.hints[2].add(1);
    setHint(h, PendingHint{kHintContainer, 0, c, nullptr});
  }
}

void ProcessHeap::containerPolicy(const void *c, const char *predicate, int k) {
  Predicate p;
  char msg[300];
  if (!parsePredicate(predicate, p)) {
    std::snprintf(msg, sizeof msg,
                  "defero: __defero_container_policy: predicate '%.80s' is not "
                  "valid (accepted: %s); container %p keeps the default\n",
                  predicate ? predicate : "(null)", kPredicateNames, c);
    os::write_all(2, msg, std::strlen(msg));
    return;
  }
  if (k < 0 || k > DEFERO_K_MAX) {
    std::snprintf(msg, sizeof msg,
                  "defero: __defero_container_policy: k=%d is not valid "
                  "(accepted: 0 for the default, 1..%d); container %p keeps "
                  "the default\n",
                  k, DEFERO_K_MAX, c);
    os::write_all(2, msg, std::strlen(msg));
    return;
  }
  registry_.setPolicy(c, p, static_cast<unsigned>(k));
  g_any_policy.store(true, std::memory_order_relaxed);
  g_fused_open.store(false, std::memory_order_relaxed); // (noteFusedOpen: policies never go)
  // The calling thread's continuation of c ends (placeAfterRecent does
  // not read policies).
  if (LocalHeap *h = tls.heap; h && h->recent.container == c)
    h->recent.size = ~std::size_t{0};
}

} // namespace defero
