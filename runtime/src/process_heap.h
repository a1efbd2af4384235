// process_heap.h - the heap behind libdefero's malloc, operator new and C
// API: routing between the per-thread small-object heaps and the large
// heap, the hint channel, policies and statistics.
//
//   small objects (<= 32 KiB): one LocalHeap per thread (pages/local_heap.h)
//     over the PageArena window; no lock, no atomic read-modify-write on
//     the owner's malloc and free; its requests above 4 KiB (not aligned,
//     not hinted) by best fit from the heap's MidHeap (pages/mid_heap.h),
//     which serves the requests above the classes too, up to 32 MiB
//   large objects (above 32 MiB, page-aligned ones, and a thread's whose
//     mid slice is full): LargeHeap (pages/large_heap.h: address-ordered
//     best fit with coalescing in a region of their own up to 32 MiB,
//     mappings above; a lock-free registry; a per-thread cache of freed
//     blocks in front)
//
// The fast paths are inline here so that overrides.cpp (and the C API's
// defero_malloc/defero_free) compile malloc and free into straight-line
// code: malloc of up to 4 KiB with no hint pending is a TLS load, a table
// load and a pop from the class's free stack (the block this thread freed
// last) or a take from its word cache (22 instructions); free of a block
// of a span where no hint placed is a push onto the calling thread's free
// stack (about 32), free by the owner of a placed span's block is
// PageArena::carvedPage, one multiply for the slot and its check, a bts
// (32). Everything else (a hint, tracing, a real-time backend, a large
// block, another thread's placed block, a full stack) takes the
// out-of-line slow path.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "config.h"
#include "container_registry.h"
#include "defero/heaplayers/top/mmap_heap.h"
#include "defero/heaplayers/utility/trace_heap.h"
#include "defero/kbit/size_classes.h"
#include "defero/pages/local_heap.h"
#include "defero/pages/large_heap.h"
#include "defero/pages/page_arena.h"
#include "defero/platform/os.h"
#include "node_layout.h"
#include "realtime_heap.h"

#ifndef DEFERO_CHECKED
#define DEFERO_CHECKED 0
#endif

namespace defero {

using pages::LocalHeap;
using pages::PageArena;
using pages::PendingHint;
using pages::OwnerCounter;
using pages::SlotPage;

/// Whether this build routes the program to a real-time backend (CMake's
/// DEFERO_BACKEND, chosen once at configure time; realtime_route.cpp).
inline constexpr bool kRealtimeBuild = DEFERO_REALTIME != 0;


/// The calling thread's heap pointers, in one thread-local record: one
/// load of its TLS offset serves every use in a function (a one-shot hint
/// and the malloc that follows it touch all three).
struct ThreadHeaps {
  /// The calling thread's heap while its next call may take the fast path;
  /// else noFastHeap(): before the thread's first call, while a hint is
  /// pending, and in traced or real-time runs (everything then takes the
  /// full path). Never null, so malloc's fast path needs no null test.
  LocalHeap *fast;
  /// The calling thread's small-object heap (null until its first call).
  LocalHeap *heap;
  /// The calling thread's recent placement (LocalHeap::recent) while
  /// hinted blocks may take the first fast path (its heap is attached and
  /// not diverted, and the process's operator new is known to be this
  /// library's, so a node placed by the fused entry is freed here); else
  /// a Recent that names no span (kClosedRecent), so placeAfterRecent
  /// declines.
  LocalHeap::Recent *recent;
};
extern constinit thread_local ThreadHeaps tls __attribute__((tls_model("initial-exec")));

// Checked builds (libdefero-checked.so) end every small block with an
// 8-byte canary in its slot's last bytes, checked when the block is freed
// or reallocated: a write past the block that reaches the slot's end is
// reported instead of silently corrupting the neighbour.
inline constexpr std::size_t kCanaryBytes = DEFERO_CHECKED ? 8 : 0;
/// Whether a small block may be a gang over another class's free slots
/// (SpanHeap::gangMalloc): not in the checked build, whose canary sits at
/// the end of a slot.
inline constexpr bool kGangs = kCanaryBytes == 0;
inline constexpr std::uint64_t kCanary = 0xCA4A'27CA'4A27'CA4Aull;
/// Requests up to this size are small (the slot includes the canary).
inline constexpr std::size_t kMaxSmall = kbit::kMaxSmallBytes - kCanaryBytes;
/// Requests up to this size take the inline fast path (one table load for
/// the class).
inline constexpr std::size_t kMaxFast = kbit::kSmallTableMax - kCanaryBytes;


/// Requests above this size and up to kMidMax come from the thread's mid
/// heap (best fit with coalescing, mid_heap.h) when it can serve them;
/// smaller ones, and aligned ones, from the size classes (up to kMaxSmall)
/// or the large heap.
inline constexpr std::size_t kMidMin = 4096 - kCanaryBytes;
inline constexpr std::size_t kMidMax = pages::MidHeap::kMaxBlock - kCanaryBytes;
static_assert(kMidMax > kMaxSmall, "the mid heap serves the requests above the classes too");
static_assert(pages::MidHeap::kMaxBlock <= pages::LargeHeap::kFitMaxBlock,
              "the mid heap's blocks are ones the large heap would cut from its region");

/// A heap that is never used: its word caches stay empty (so malloc's fast
/// path misses to mallocRefill, which sends it to the full path) and no
/// span names it its owner (so free's fast path misses). Zero before its
/// constructor runs, which is all the fast path reads. Constructed at load
/// time, never destroyed (a thread may still call malloc after static
/// destructors ran); its address is a link-time constant (noFastHeap()).
union NoFastHeap {
  NoFastHeap() : heap(20, nullptr) {} // (any K: it never places)
  ~NoFastHeap() {}
  LocalHeap heap;
};
extern NoFastHeap g_no_fast_heap;
inline LocalHeap *noFastHeap() { return &g_no_fast_heap.heap; }

/// The process's live bytes and their peak (see LiveTotals).
extern pages::LiveTotals g_live;

#define DEFERO_ALWAYS_INLINE inline __attribute__((always_inline))

inline void armCanary(void *p, std::size_t slot) {
  if constexpr (kCanaryBytes != 0)
    std::memcpy(static_cast<char *>(p) + slot - kCanaryBytes, &kCanary, kCanaryBytes);
}
inline void checkCanary(void *p, std::size_t slot, const char *call) {
  if constexpr (kCanaryBytes != 0) {
    std::uint64_t v;
    std::memcpy(&v, static_cast<char *>(p) + slot - kCanaryBytes, sizeof v);
    if (v != kCanary)
      os::fatal_pointer(call, p, "heap overflow: the canary after the block was overwritten");
  }
  (void)p, (void)slot, (void)call;
}

/// Arms the canary of a small block of class cls just taken by h's owner
/// (the layer that took its slot counted it).
DEFERO_ALWAYS_INLINE void finishSmall(LocalHeap *h, void *p, unsigned cls) {
  const std::size_t slot = kbit::kClassBytes[cls];
  armCanary(p, slot);
  (void)slot, (void)h;
}

/// malloc's path when the word cache of class cls is empty and nothing else
/// is pending (tls.fast is h): the heap refills it (LocalHeap::mallocSlow),
/// else the full path.
__attribute__((noinline)) void *mallocRefill(LocalHeap *h, unsigned cls, std::size_t sz);

/// The fast path's take from the word cache at byte offset `off` of h's
/// (its class's): the head of its free list, else its word's lowest slot;
/// an empty cache goes to `refill(h, cls, sz)`.
template <class Refill>
DEFERO_ALWAYS_INLINE void *mallocCached(LocalHeap *h, std::size_t off, std::size_t sz,
                                        Refill refill) {
  LocalHeap::WordCache *c = h->cacheAt(off);
  // One register holds the cache (GCC would otherwise compute its address
  // twice: two more instructions on every malloc).
  asm("" : "+r"(c));
  if constexpr (kCanaryBytes == 0)
    if (void *top = c->head)
      return LocalHeap::popFreed(c, top);
  const std::uint64_t bits = c->bits;
  if (__builtin_expect(bits == 0, 0))
    return refill(h, LocalHeap::classAt(off), sz);
  bool twice;
  void *p = LocalHeap::takeFrom(c, bits, twice);
  if (__builtin_expect(twice, 0))
    return LocalHeap::freedTwice(p);
  if constexpr (kCanaryBytes != 0)
    finishSmall(h, p, LocalHeap::classAt(off));
  return p;
}

/// malloc's fast path: a request of up to kMaxFast bytes from the word
/// cache of the calling thread's heap, refilled straight from its spans
/// when empty; anything else goes to `miss(sz)`. Every call is a tail
/// call, so a hit needs no stack frame and no null test.
/// `refill(h, cls, sz)` takes the empty cache's case (mallocRefill, or a
/// caller's wrapper of it that must not return null: operator new).
template <class Miss, class Refill = decltype(&mallocRefill)>
DEFERO_ALWAYS_INLINE void *mallocFastOr(std::size_t sz, Miss miss, Refill refill = mallocRefill) {
  LocalHeap *h = tls.fast;
  if (__builtin_expect(sz > kMaxFast, 0))
    return miss(sz);
  return mallocCached(h, LocalHeap::kCacheOffset[(sz + kCanaryBytes + 15) / 16], sz, refill);
}

/// The class of a hinted container node of sz bytes (at most kMaxFast)
/// that operator new of one object makes (the fused entry's, or operator
/// new's with a one-shot hint pending): a node class for 17-24 and 33-40
/// bytes (kbit::nodeClassOf: 8-byte aligned), or in the checked build,
/// whose blocks end with a canary, the request's class.
DEFERO_ALWAYS_INLINE unsigned fusedClassOf(std::size_t sz) {
  if constexpr (kCanaryBytes == 0)
    return kbit::kNodeTable[(sz + 7) / 8];
  return kbit::kSmallTable[(sz + kCanaryBytes + 15) / 16];
}

/// mallocFastOr for a hinted node of one object: a node class's slot for
/// 17-24 and 33-40 bytes (fusedClassOf), else malloc's. The same instructions
/// (another table).
template <class Miss, class Refill = decltype(&mallocRefill)>
DEFERO_ALWAYS_INLINE void *mallocNodeOr(std::size_t sz, Miss miss, Refill refill = mallocRefill) {
  if constexpr (kCanaryBytes != 0)
    return mallocFastOr(sz, miss, refill);
  LocalHeap *h = tls.fast;
  if (__builtin_expect(sz > kMaxFast, 0))
    return miss(sz);
  return mallocCached(h, LocalHeap::kNodeCacheOffset[(sz + 7) / 8], sz, refill);
}

/// mallocFastOr with nullptr on a miss: then take ProcessHeap::malloc.
DEFERO_ALWAYS_INLINE void *mallocFast(std::size_t sz) {
  return mallocFastOr(sz, [](std::size_t) -> void * { return nullptr; });
}

/// free's path for p, a block of pg, another heap's span (free's fast path
/// tail-calls it when its miss is freeFull): into h's outbox for its owner
/// (RemoteFreeLayer::freeToOther), counted; freeFull when h is
/// noFastHeap() (the full path's case) or p may be a block freed twice (it
/// carries a free stack's mark). About 52 instructions with the outbox's
/// 33 (callgrind, churn_bench larson x8), against 114 through the full
/// path.
__attribute__((noinline)) void freeToOwner(void *p, const char *call, LocalHeap *h,
                                           SlotPage *pg);

/// free's fast path: a block of a span of the calling thread's heap, or
/// (freeToOwner) of another heap's; any
/// other block, and a double free, go to `miss(p, call)` (a tail call, as
/// every call here is, so the inline free needs no stack frame).
template <class Miss>
DEFERO_ALWAYS_INLINE void freeFastOr(void *p, const char *call, Miss miss) {
  SlotPage *pg;
  if (__builtin_expect(!PageArena::get().carvedPage(p, pg), 0))
    return miss(p, call);
  LocalHeap *h = tls.fast;
  std::uint64_t i;
  if (__builtin_expect(!pg->slotStart(p, i), 0)) // (kLostPage has no slot)
    return miss(p, call);
  if constexpr (kCanaryBytes == 0) {
    // The owner's block of a span where no hint placed: onto the free
    // stack of its class; when that is full, into its bitmap below.
    // Another heap's block goes home (miss: freeSlow). The owner's block
    // of a placed span: into its bitmap at once (one compare: the hinted
    // pair's free; the unhinted one pays the owner's test, 2 instructions).
    // (A plain read, folded into the compare: placed_owner changes once.)
    if (__builtin_expect(pages::peek(pg->placed_owner) != h, 1)) {
      if (__builtin_expect(pg->owner != h, 0)) {
        if constexpr (std::is_same_v<Miss, void (*)(void *, const char *)>)
          return freeToOwner(p, call, h, pg); // (miss is freeFull)
        return miss(p, call);
      }
      if (__builtin_expect(LocalHeap::marked(p), 0))
        return miss(p, call); // perhaps a double free
      if (__builtin_expect(LocalHeap::pushFreed(h->cacheAt(pg->cache_off), p), 1))
        return;
    }
  } else {
    if (__builtin_expect(pg->owner != h, 0)) // (kLostPage's owner is null)
      return miss(p, call);
  }
  // The owner's block of a placed span (or a full stack): into its bitmap.
  checkCanary(p, pg->slot_bytes, call);
  return h->freeOwned(
      pg, i, [&] { h->count.frees[pg->cls].add(1); },
      [&](SlotPage *q, unsigned w) { return h->noteRoom(q, w); },
      [&] { return miss(p, call); });
}

/// freeFastOr with false on a miss: then take ProcessHeap::free.
DEFERO_ALWAYS_INLINE bool freeFast(void *p, const char *call) {
  bool freed = true;
  freeFastOr(p, call, [&](void *, const char *) { freed = false; });
  return freed;
}

/// True once any container has a policy of its own (then every hinted
/// allocation takes the full path, which reads the policy).
extern std::atomic<bool> g_any_policy;

/// False when the process's default predicate is First (DEFERO_POLICY=
/// first): then a hinted node with no container policy of its own is not
/// placed: the fused entry and a one-shot hint's malloc give it malloc's
/// slot (pair_cost: 142.2 and 187.1 instructions a pair, unhinted 80.2),
/// and the continuation fast path is closed (tls.recent). Set once, before
/// any thread has a heap.
extern bool g_place_default;

/// g_place_default, no container with a policy of its own (g_any_policy),
/// and the process's operator new this library's (g_new_ours): the fused
/// entry's placement beside an anchor may skip the full path (with the
/// calling thread's heap not diverted). One load for the three, kept by
/// noteFusedOpen whenever one of them changes.
extern std::atomic<bool> g_fused_open;
/// Recomputes g_fused_open (after g_place_default, g_any_policy or
/// g_new_ours changed).
void noteFusedOpen();

/// True when the process's default predicate is Auto (DEFERO_POLICY unset
/// or auto). Auto keeps the allocation order of inserts that hop between
/// containers (hopsContainers). Set once, before any thread has a heap.
extern bool g_auto_default;

/// Records p, a block malloc or a placement just gave h for `container` (a
/// request of sz bytes, a hint of kind row + 1), as h's recent node. The
/// continuation fast path takes slots above it only in a span of h's own:
/// malloc may hand out another heap's block that this thread freed.
DEFERO_ALWAYS_INLINE void noteRecentBlock(LocalHeap *h, const void *container, const void *p,
                            std::size_t sz, unsigned row) {
  SlotPage *pg = PageArena::get().spanOf(p);
  std::uint64_t i = 0;
  if (pg && (pg->owner != h || !pg->slotStart(p, i))) // (a gang's block is no slot)
    pg = nullptr;
  h->noteRecent(container, p, pg, i, sz, row);
}

/// Whether a neighbour hint for `container`, placed by a predicate `auto`,
/// hops: the thread's previous hinted allocation served another container
/// (adjacency lists built edge by edge, cells refilled in turn). When its
/// anchor has no free slot within a line or two, such a node takes
/// malloc's next slot, in allocation order with the nodes of the other
/// containers inserted around it, instead of a hole in its anchor's
/// K-class or a run of its own: containers filled together are read
/// together (debruijn_net's breadth-first search walks the lists of
/// nodes it reached together; placed apart, with fewer of callgrind's
/// misses, its search ran 1.3x slower on this machine). A run of inserts
/// into one container (a list built, a set filled) is placed as before.
/// The first node of an empty list is no hop: it opens the list's cell
/// (PlacementLayer::takeCell), which its next nodes fill, hop or not.
/// A container hint (a node made before its place is known: a map's
/// operator[] and emplace, a hashtable's node) hops the same way unless
/// the thread's last hinted node was its own last hop (two inserts in a
/// row: the container is being filled, and is placed as before). It has
/// no anchor to search beside: it takes malloc's slot at once and leaves
/// the thread's recent node as it was (noteHop), so that the container it
/// interrupted continues on the fast path (mini_compiler's symbol tables
/// and fact maps, filled between list inserts: 346,000 such nodes, each
/// about 370 instructions through the full path to the same unplaced
/// slot, and the list's next push_back off the fast path).
DEFERO_ALWAYS_INLINE bool hopsContainers(const LocalHeap *h, int kind, const void *container) {
  if (kind == kHintNeighbor)
    return container != h->recent.container;
  return kind == kHintContainer && container != h->recent.container &&
         (container != h->hop_container || h->recent.node != h->hop_after);
}

/// Records a container hint's hop (hopsContainers) for `container`.
DEFERO_ALWAYS_INLINE void noteHop(LocalHeap *h, const void *container) {
  h->hop_container = container;
  h->hop_after = h->recent.node;
}

/// Makes `hint` the calling thread's pending hint if it has a heap (false:
/// take ProcessHeap's hint functions). `which` counts it.
DEFERO_ALWAYS_INLINE bool hintFast(const PendingHint &hint, unsigned which) {
  LocalHeap *h = tls.heap;
  if (__builtin_expect(h == nullptr, 0))
    return false;
  h->count.hints[which].add(1);
  h->hint = hint;
  tls.fast = noFastHeap();
  return true;
}

/// The Recent tls.recent names while the fast path is closed: no span.
extern LocalHeap::Recent kClosedRecent;

/// True once the process's operator new is known to be this library's
/// (api.cpp decides it when the library is loaded).
extern std::atomic<bool> g_new_ours;

/// Points tls.recent at the calling thread's recent placement if its fast
/// path may be open (see tls.recent).
void openRecent(LocalHeap *h);

/// Takes slot n of pg, the slot right above the recent node of r (at
/// `node`), if it is free, and makes it the recent node: one more in r's
/// streak (counted when it ends: LocalHeap::endStreak).
DEFERO_ALWAYS_INLINE void *takeAboveRecent(LocalHeap::Recent &r, const void *node,
                                           SlotPage *pg, std::uint64_t n) {
  std::uint64_t *word = &pg->free[n / pages::kWordBits];
  // One register for the word's address (GCC would keep its index and
  // the index plus the bitmap's offset: two callee-saved registers).
  asm("" : "+r"(word));
  std::uint64_t f = *word;
  bool was_free;
#if defined(__x86_64__)
  asm("btrq %2, %0" : "+r"(f), "=@ccc"(was_free) : "r"(n));
#else
  was_free = (f >> (n % pages::kWordBits)) & 1;
  f &= ~(std::uint64_t{1} << (n % pages::kWordBits));
#endif
  if (__builtin_expect(!was_free, 0))
    return nullptr;
  *word = f;
  if (__builtin_expect(f == 0, 0)) {
    std::uint64_t w = n; // (recomputed here: no register holds it through the take)
    asm("" : "+r"(w));
    pg->summary &= ~(std::uint64_t{1} << (w / pages::kWordBits));
  }
  ++pg->used;
  // The slot's address from the node's: an add (the slot's index times
  // the slot size is an imul and a load more).
  void *p = const_cast<char *>(static_cast<const char *>(node)) + pg->slot_bytes;
  r.node = p;
  __atomic_store_n(&r.slot, n, __ATOMIC_RELAXED); // (a plain store; stats may read it)
  armCanary(p, pg->slot_bytes);
  if (p == nullptr) // (never: a slot of the window)
    __builtin_unreachable();
  return p;
}

/// The hinted fast path's first case: a hint that continues the thread's
/// recent placement r, answered by the slot right above r's node if it is
/// free. That is a neighbour hint naming r's node as the tail (push_back
/// after push_back), a tree hint naming it as the parent of a right child
/// (an ascending insert), or a container hint for r's container (its node
/// still live), for a request of r's size by a hint of the kind of r's
/// streak. nullptr: take placeBeside or the full path. About 28
/// instructions.
///
/// A container's policy is not read here: a block placed for a container
/// with a policy (ProcessHeap::hinted) leaves no recent node to continue,
/// and __defero_container_policy ends the calling thread's continuation of
/// that container's (another thread's ends at its next placement off this
/// path).
template <bool kOneShot = false>
DEFERO_ALWAYS_INLINE void *placeAfterRecent(LocalHeap::Recent &r, std::size_t sz, int kind,
                                            const void *container, const void *where,
                                            int side) {
  SlotPage *pg = r.page;
  // A one-shot hint's block is malloc's or operator new's (maybe an
  // array's), which owe 16-byte alignment: it never continues a fused
  // node's streak in a node class (the only slots of 8 mod 16 bytes: a
  // test of a field read below anyway, two instructions).
  if (kOneShot && (pg->slot_bytes & 8) != 0)
    return nullptr;
  const std::uint64_t i = r.slot, n = i + 1;
  // (No bound test: slot n is the one above a slot of pg, at most the
  // bitmap's last word's first, which is always 0, taken; kNoPage, no
  // recent node or a closed fast path, has every bit 0.)
  if (__builtin_expect(kind == kHintNeighbor, 1)) {
    // After the node this thread placed last: the tail after a push_back
    // (a node inserted before it, which this also takes, lands a slot
    // above instead of below: the same line or the next). The container
    // is not compared (three instructions): a node the program names as
    // another container's tail (spliced there) is continued as well, and
    // the record names that container from then on.
    if (LocalHeap::recentKey(sz, kHintNeighbor - 1) != r.size || where != r.node)
      return nullptr;
    r.container = container;
    return takeAboveRecent(r, where, pg, n);
  }
  if (kind == kHintTree) {
    if (LocalHeap::recentKey(sz, kHintTree - 1) != r.size || where != r.node ||
        side != 0)
      return nullptr;
    return takeAboveRecent(r, where, pg, n);
  }
  if (kind == kHintContainer) {
    // A remembered anchor: only while it is live.
    if (LocalHeap::recentKey(sz, kHintContainer - 1) != r.size || container != r.container ||
        pg->isFree(static_cast<unsigned>(i)))
      return nullptr;
    return takeAboveRecent(r, r.node, pg, n);
  }
  return nullptr;
}

/// Places a block of up to kMaxFast bytes, of class cls (the request's,
/// or for the fused entry fusedClassOf's), beside a neighbour or tree
/// hint's anchor when the anchor is a block of h (the calling thread's
/// heap) of that class with a free slot within a line or two of it
/// (below it first for a node linked before it, above it first for the
/// others). nullptr: take the full path (with hint.searched set when it
/// searched and found no free slot, so that the full path does not search
/// again). Counts the allocation; does not touch h's pending hint.
DEFERO_ALWAYS_INLINE void *placeBeside(LocalHeap *h, std::size_t sz, PendingHint &hint,
                                       unsigned cls) {
  SlotPage *pg;
  unsigned i;
  if (hint.where == h->recent.node && h->recent.page != &pages::kNoPage) {
    pg = h->recent.page; // the node this thread placed last (push_back again)
    i = static_cast<unsigned>(h->recent.slot);
  } else {
    pg = PageArena::get().spanOf(hint.where);
    if (pg == nullptr || pg->owner != h)
      return nullptr;
    i = LocalHeap::slotOf(pg, hint.where);
  }
  if (pg->cls != cls)
    return nullptr;
  if (__builtin_expect(pg->cached_word != pages::kNoWord, 0))
    return nullptr; // ProcessHeap::hinted uncaches it first (no call here)
  // A container hint's anchor is remembered (the thread's last node for
  // the container), perhaps since freed (ProcessHeap::hinted drops it); a
  // neighbour or a parent the program names is live.
  if (hint.kind == kHintContainer && __builtin_expect(pg->isFree(i), 0))
    return nullptr;
  const unsigned j = LocalHeap::findBeside(pg, i, LocalHeap::lineReach(cls), !linksBefore(hint));
  if (j == pages::kNoSlot) {
    hint.searched = 1; // (the full path need not search again)
    return nullptr;
  }
  pg->takeFound(j);
  h->notePlaced(pg);
  h->count.allocs[cls].add(1);
  h->notePlacedBytes(kbit::kClassBytes[cls]);
  void *p = pg->address(j);
  h->noteRecent(hint.container, p, pg, j, sz, hint.kind - 1u);
  finishSmall(h, p, cls);
  h->count.hinted_allocs.add(1);
  h->count.hint_same_class.add(h->sameClass(hint.where, p));
  return p;
}

/// Whether h's hinted blocks may skip the full path's policy reading (no
/// tracing, no real-time backend, no container with a policy of its own).
DEFERO_ALWAYS_INLINE bool hintPoliciesUniform(const LocalHeap *h) {
  return h->divert == 0 && !g_any_policy.load(std::memory_order_relaxed);
}

/// Whether h may place hinted blocks on the fast path: their policies are
/// uniform and the default predicate places (not First).
DEFERO_ALWAYS_INLINE bool hintFastPathOpen(const LocalHeap *h) {
  return g_place_default && hintPoliciesUniform(h);
}

/// Whether a hint can take the fast path (placeBeside), and its anchor: a
/// neighbour or tree hint's own; a container hint's is the node the thread
/// last placed for the same container (ProcessHeap::hinted would choose it
/// too), if any.
DEFERO_ALWAYS_INLINE bool fastAnchor(const LocalHeap *h, PendingHint &hint) {
  if (hint.kind == kHintContainer) {
    if (hint.container != h->recent.container || h->recent.node == nullptr)
      return false;
    hint.where = h->recent.node;
    return true;
  }
  return hint.kind == kHintNeighbor || hint.kind == kHintTree;
}

/// The hinted allocation's fast path: the calling thread's pending hint,
/// placed by placeBeside. nullptr: take the full path. kNode: the block
/// is one node made by operator new (not an array's, not malloc's), which
/// may take a node class (fusedClassOf).
template <bool kNode = false> DEFERO_ALWAYS_INLINE void *mallocHintedFast(std::size_t sz) {
  LocalHeap *h = tls.heap;
  if (__builtin_expect(h == nullptr || sz > kMaxFast, 0))
    return nullptr;
  PendingHint hint = h->hint;
  if (__builtin_expect(!fastAnchor(h, hint) || !hintFastPathOpen(h), 0))
    return nullptr;
  void *p = placeBeside(h, sz, hint,
                        kNode ? fusedClassOf(sz) : kbit::kSmallTable[(sz + kCanaryBytes + 15) / 16]);
  if (p) {
    h->hint.kind = kHintNone;
    tls.fast = h;
  } else {
    h->hint.searched = hint.searched;
  }
  return p;
}

class ProcessHeap {
public:
  explicit ProcessHeap(const Config &cfg);

  void *malloc(std::size_t sz) {
    if (void *p = mallocFast(sz))
      return p;
    if (void *p = mallocHintedFast(sz))
      return p;
    return mallocSlow(sz, nullptr);
  }

  void free(void *p, const char *call) {
    if (!freeFast(p, call))
      freeSlow(p, call);
  }

  /// kNode: one node made by operator new with a hint pending, which may
  /// take a node class (fusedClassOf).
  void *mallocSlow(std::size_t sz, bool *fresh, bool node = false);
  /// A block of kMidMin-kMidMax bytes from h's mid heap, for h the calling
  /// thread's heap with its fast path open (tls.fast: no hint pending, no
  /// trace, no real-time backend), where mallocSlow would take it too,
  /// without the hinted and slow paths' dispatch; nullptr: take those.
  void *mallocMidOpen(LocalHeap *h, std::size_t sz) { return mallocMid(h, sz); }
  /// Frees p, a block of a mid heap's slice, for the calling thread (h,
  /// its heap with its fast path open), as freeSlow would.
  void freeMidOpen(LocalHeap *h, void *p, const char *call) { freeMid(h, p, call); }
  /// A hinted small block (sz <= kMaxFast) for h, the calling thread's
  /// heap, whose hinted fast path is open (hintFastPathOpen: no real-time
  /// heap, no trace): ProcessHeap::hinted's placement without a pending
  /// hint (one left pending by a one-shot hint is dropped, as the fused
  /// entry always did). nullptr: out of memory.
  void *mallocHintedOpen(LocalHeap *h, std::size_t sz, const PendingHint &hint);
  /// The same for a tree hint whose anchor, a block of h of the node's
  /// class, has no free slot beside it (placeBeside searched): the zone's
  /// run or the tree's, without hinted()'s other cases (which it takes
  /// when one applies). With the other steps of that session, a set's
  /// build of 300K inserts: 289.1 -> 236.7 M instructions (README).
  void *mallocTreeOpen(LocalHeap *h, std::size_t sz, const void *container, const void *anchor,
                       bool left);
  /// The same for a list's first node (a neighbour hint naming the empty
  /// container: its header, or no anchor) whose anchor is no block of h's
  /// in the node's class: a cell of its own (takeCell), without hinted()'s
  /// other cases (which it takes when one applies).
  void *mallocListFirst(LocalHeap *h, std::size_t sz, const void *container,
                        const void *anchor);
  /// The same for a container hint that does not hop because the thread's
  /// last hinted node was this container's hop (its second insert in a
  /// row) and the thread's recent node is another container's: no anchor
  /// to search beside, so the container's run's next slot, else malloc's
  /// (the class's free stack given back to the bitmaps first, so that its
  /// next inserts continue above it), without hinted()'s other cases.
  void *mallocContainerOpen(LocalHeap *h, std::size_t sz, const void *container);
  /// free's full path (after freeFast declined).
  void freeSlow(void *p, const char *call);
  /// freeSlow for p, not a slot start of pg: a gang's block
  /// (SpanHeap::gangOf) freed, or false.
  bool freeGang(LocalHeap *h, SlotPage *pg, void *p, const char *call);

  void *mallocAligned(std::size_t sz, std::size_t align);
  void *calloc(std::size_t n, std::size_t sz);
  void *realloc(void *p, std::size_t sz, const char *call);
  std::size_t usableSize(const void *p);

  void *allocNear(std::size_t sz, const void *hint);
  void *allocPath(std::size_t sz, std::uint64_t bits, unsigned depth);
  long long classOf(const void *p);

  // hint ABI
  void hintNeighbor(const void *c, const void *n);
  void hintTree(const void *c, const void *parent, int insert_left);
  void hintContainer(const void *c);
  void containerPolicy(const void *c, const char *predicate, int k);

  /// Formats the stats JSON (with a trailing newline) into buf; returns its
  /// length.
  std::size_t formatStats(char *buf, std::size_t cap);
  void atExit();

  void forkPrepare();
  void forkParent();
  void forkChild();

  const Config &config() const { return cfg_; }

  /// Real-time builds: starts the buddy heap DEFERO_BACKEND names (nothing
  /// for kbit). Runs once, while the process heap is being constructed:
  /// the small heaps already serve the model's own allocations.
  void startRealtime();

  /// The calling thread's heap, attached (adopted or made) on first use;
  /// nullptr only if no metadata can be mapped.
  LocalHeap *heap() {
    LocalHeap *h = tls.heap;
    return h ? h : attachHeap();
  }

  /// The calling thread's heap, its pending hint dropped (a call that does
  /// not place by it); nullptr, errno ENOMEM, if it cannot have one.
  LocalHeap *heapDroppingHint() {
    LocalHeap *h = heap();
    if (__builtin_expect(!h, 0)) {
      errno = ENOMEM;
      return nullptr;
    }
    takeHint(h);
    return h;
  }

  /// Consumes h's pending hint (one-shot, whatever happens next).
  static PendingHint takeHint(LocalHeap *h) {
    const PendingHint hint = h->hint;
    h->hint.kind = kHintNone;
    tls.fast = h->divert ? noFastHeap() : h;
    return hint;
  }
  /// Makes `hint` h's pending hint.
  static void setHint(LocalHeap *h, const PendingHint &hint) {
    h->hint = hint;
    tls.fast = noFastHeap();
  }

private:
  void *mallocLarge(LocalHeap *h, std::size_t sz, std::size_t align, bool *fresh);
  void *mallocMid(LocalHeap *h, std::size_t sz, bool *fresh = nullptr);
  void settleMid(LocalHeap *h);
  void freeMid(LocalHeap *h, void *p, const char *call);
  /// Bytes the mid heaps hold from the OS (slices handed out, less their
  /// free runs given back).
  static std::int64_t midHeldBytes() {
    return pages::g_mid_top.load(std::memory_order_relaxed) -
           pages::g_mid_released.load(std::memory_order_relaxed);
  }
  void *hinted(LocalHeap *h, std::size_t sz, unsigned cls, const PendingHint &hint);
  /// Counts a block placed for a hint (hinted, policy, same K-class) and
  /// ends the fast path's continuation of a container with a policy.
  void countHinted(LocalHeap *h, const pages::ContainerSlot &cs, const void *anchor,
                   const void *p);
  /// The open paths' end (mallocTreeOpen, mallocListFirst): malloc's slot
  /// when the placement found none (the large path when the window is
  /// full), then the recent node, the counts and the canary.
  void *endOpen(LocalHeap *h, std::size_t sz, unsigned cls, const pages::ContainerSlot &cs,
                const void *container, const void *anchor, void *p, unsigned row);
  LocalHeap *attachHeap();
  void unlockAfterFork(bool child);
  static void threadExit(void *heap);
  void sweepOrphans();
  void noteFootprint();
  void traceMalloc(void *p, std::size_t sz) {
    if (trace_.enabled())
      trace_.onMalloc(p, sz);
  }
  std::uint8_t divertFlag() const;
  /// The small heaps' counts, summed under heaps_lock_ (read without
  /// stopping their owners): small_allocs counts the word caches' unhanded
  /// slots as not taken and the free stacks' blocks as taken (a push is a
  /// free, a pop an allocation); live is their live bytes not yet
  /// published to g_live.
  struct HeapSums {
    unsigned long long small_allocs, large_allocs, frees, hints[3], hinted, same,
        policy_allocs;
    long long live, released;
  };
  HeapSums sumHeaps();
  /// The keys of the stats JSON every build writes, in its order.
  struct StatsKeys {
    unsigned long long allocs, frees;
    long long peak_live_bytes;
    unsigned long long peak_footprint_bytes, hints[3], hinted_allocs, hint_same_class;
    const char *policy;
    unsigned k;
    const char *backend;
    long long live_bytes;
    unsigned long long large_mapped_bytes, container_policies, policy_allocs;
    long long released_bytes, resident_bytes;
    bool checked;
  };
  /// The keys read the same way in every build (hints, policy, k, backend,
  /// container_policies, policy_allocs, checked) from s and the process
  /// heap; the caller fills in the heap's own counts.
  StatsKeys statsKeys(const HeapSums &s);
  /// The one stats JSON writer: keys, then `extra` (a real-time build's
  /// keys, `"key": value, ...` without a leading comma; nullptr for none),
  /// as one object and a newline in buf, with snprintf: never allocates.
  /// Returns its length (truncated to cap - 1; 0 on an encoding error).
  static std::size_t writeStats(const StatsKeys &keys, const char *extra, char *buf,
                                std::size_t cap);
  // Real-time builds only (realtime_route.cpp); every call sits in
  // `if constexpr (kRealtimeBuild)`.
  void *realtimeMalloc(LocalHeap *h, std::size_t sz, const PendingHint &hint);
  std::size_t formatRealtimeStats(char *buf, std::size_t cap);
  RealtimeHeap *rt_ = nullptr;
  /// Whether this call should go to the real-time heap.
  bool realtime() const {
    if constexpr (kRealtimeBuild)
      return rt_ && !tls_in_realtime;
    return false;
  }

  Config cfg_;
  int pid_; // the process that read the configuration
  os::ThreadExitHook exit_hook_;
  pages::LargeHeap large_;
  ContainerRegistry registry_;
  TraceLog trace_;
  SpinLock heaps_lock_; // the heap lists (attach, exit, fork, stats)
  LocalHeap *heaps_ = nullptr;   // every heap ever made
  LocalHeap *orphans_ = nullptr; // heaps whose thread exited
  std::atomic<std::uint64_t> peak_footprint_{0};
};

/// The process heap, constructed (and the environment read) on first use.
ProcessHeap &processHeap();

/// malloc's and free's full paths behind their fast paths: out of line, so
/// the fast path keeps no register across a call.
__attribute__((noinline)) void *mallocFull(std::size_t sz);
/// mallocFull for operator new of one object (not an array): a one-shot
/// hint's node may take a node class, as the fused entry's does.
__attribute__((noinline)) void *mallocFullNode(std::size_t sz);
/// ProcessHeap::mallocSlow for the calling thread, out of line (the hint
/// channel's one-shot paths end in it).
__attribute__((noinline)) void *mallocSlowEntry(std::size_t sz, bool node = false);
__attribute__((noinline)) void freeFull(void *p, const char *call);

} // namespace defero
