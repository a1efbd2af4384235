// local_heap.h - LocalHeap: one thread's small-object heap, composed of
// the layers of layers.h:
//
//   LocalHeap = PlacementLayer<WordCacheLayer<RemoteFreeLayer<SpanHeap>>>
//
// Its owner allocates and frees with no lock and no atomic
// read-modify-write; other threads' frees reach it through a lock-free
// list it collects (remote_free.h). Unhinted mallocs take slots from a
// word cache (word_cache.h); hinted ones are placed beside their anchor or
// in their container's run (placement.h); spans, frees and counters are
// SpanHeap's (span_heap.h).
//
// Costs (x86-64, callgrind, with the process heap's inline paths): malloc
// from the free stack about 20 instructions, from the word cache 22; free
// onto the free stack about 34 (any thread's block of a span where no hint
// placed), into a placed span's bitmap by its owner 32, another placed
// span's block a link into the outbox (one CAS per 29). Through the fused entry, a hinted
// malloc that continues the thread's last placement (push_back after
// push_back: the slot right above the tail) costs about 22 instructions
// more than an unhinted one; beside any other anchor, about 100 more.
//
// A heap outlives its thread: when the thread exits the heap is orphaned
// whole (its spans keep pointing at it, remote frees keep arriving) and the
// next new thread adopts it, so no span ever changes owner. Counters are
// plain per-heap words (written only by the owner, so readers merge them
// without a data race).
#pragma once

#include <cstdint>

#include "defero/heaplayers/top/mmap_heap.h"
#include "defero/pages/placement.h"
#include "defero/pages/remote_free.h"
#include "defero/pages/span_heap.h"
#include "defero/pages/word_cache.h"

namespace defero::pages {

/// The pending one-shot hint of a thread (kind 0: none). Kinds are the
/// hint ABI's (1 neighbour, 2 tree, 3 container).
struct PendingHint {
  std::uint8_t kind = 0;
  std::int8_t side = 0; // tree: 1 = insert left
  const void *container = nullptr;
  const void *where = nullptr;
  /// The inline placement (placeBeside) searched beside `where` and found
  /// no free slot: the full path goes straight to the container's run.
  std::uint8_t searched = 0;
};

class LocalHeap final
    : public PlacementLayer<WordCacheLayer<RemoteFreeLayer<SpanHeap>>> {
public:
  LocalHeap(unsigned k, LiveTotals *totals) : PlacementLayer(k, totals) {}

  // --- bookkeeping read by the process heap ---------------------------------

  PendingHint hint;           ///< this thread's pending one-shot hint
  /// The node this thread placed last by a hint, and what the hinted fast
  /// path needs to place the next one right above it (push_back after
  /// push_back, an ascending insert into a tree, a container hint for the
  /// same container) with no page map, multiply or class lookup. A span
  /// never changes while a node lives in it, so page and slot stay right
  /// as long as a live node at `node` is named.
  struct Recent {
    const void *node = nullptr;      ///< null: none
    const void *container = nullptr; ///< the container it was placed for
    SlotPage *page = &kNoPage;       ///< node's span (kNoPage: none; never null)
    std::uint64_t slot = 0;          ///< node's slot in page
    std::size_t size = ~std::size_t{0}; ///< the request it answered
    OwnerCounter *placed = nullptr;  ///< &count.placed[0][page's class]
    std::uintptr_t class_end = 0;    ///< the end of node's K-class
  } recent;

  /// Records p (slot `slot` of pg, answering a request of sz bytes), just
  /// placed for `container`, as the thread's recent node; p null: none.
  void noteRecent(const void *container, const void *p, SlotPage *pg, std::uint64_t slot,
                  std::size_t sz) {
    recent.container = container;
    recent.node = p;
    if (!p || !pg) {
      recent.page = &kNoPage;
      recent.size = ~std::size_t{0};
      return;
    }
    recent.page = pg;
    recent.slot = slot;
    recent.size = sz;
    recent.placed = &count.placed[0][pg->cls];
    recent.class_end = classEnd(p);
  }
  /// The end of the K-class of the recent node, p, just placed above it
  /// (the fast path's placement crossed into the next class).
  void crossedClass(const void *p) {
    count.placed_crossed.add(1);
    recent.class_end = classEnd(p);
  }
  std::uint8_t divert = 0;    ///< nonzero: every call takes the full path
  /// Large blocks this thread freed, kept for its next large mallocs (the
  /// process heap's; given to the shared cache when the thread exits).
  MmapThreadCache large_cache;
  LocalHeap *next_heap = nullptr;   ///< every heap (ProcessHeap's list)
  LocalHeap *next_orphan = nullptr; ///< heaps without a thread

};

// Each layer meets the concept the one above it requires (layers.h).
static_assert(SpanSource<SpanHeap>);
static_assert(RemoteSink<RemoteFreeLayer<SpanHeap>>);
static_assert(SlotSource<WordCacheLayer<RemoteFreeLayer<SpanHeap>>>);
static_assert(SlotSource<LocalHeap>);

} // namespace defero::pages
