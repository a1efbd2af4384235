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
// hit 22 instructions, free by the owner 26, a free from another thread a
// link into the outbox (one CAS per 32), a hinted malloc beside its anchor
// about 100 more than an unhinted one through the fused entry.
//
// A heap outlives its thread: when the thread exits the heap is orphaned
// whole (its spans keep pointing at it, remote frees keep arriving) and the
// next new thread adopts it, so no span ever changes owner. Counters are
// plain per-heap words (written only by the owner, so readers merge them
// without a data race).
#pragma once

#include <cstdint>

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
};

class LocalHeap final
    : public PlacementLayer<WordCacheLayer<RemoteFreeLayer<SpanHeap>>> {
public:
  LocalHeap(unsigned k, LiveTotals *totals) : PlacementLayer(k, totals) {}

  // --- bookkeeping read by the process heap ---------------------------------

  PendingHint hint;           ///< this thread's pending one-shot hint
  /// The container of the thread's last hinted allocation and the node it
  /// got (the fast path records only these; a container hint for the same
  /// container then goes beside that node).
  const void *recent_container = nullptr, *recent_node = nullptr;
  /// recent_node's span and slot (recent_page null: not known), so that a
  /// hint naming that node (push_back after push_back) skips the page map
  /// and the slot's multiply. A span never changes while a node lives in
  /// it, so these stay right as long as recent_node is the same address.
  SlotPage *recent_page = nullptr;
  std::uint32_t recent_slot = 0;

  /// Records p, just placed for `container`, as the thread's recent node.
  void noteRecent(const void *container, const void *p, SlotPage *pg, std::uint32_t slot) {
    recent_container = container;
    recent_node = p;
    recent_page = pg;
    recent_slot = slot;
  }
  std::uint8_t divert = 0;    ///< nonzero: every call takes the full path
  LocalHeap *next_heap = nullptr;   ///< every heap (ProcessHeap's list)
  LocalHeap *next_orphan = nullptr; ///< heaps without a thread

};

// Each layer meets the concept the one above it requires (layers.h).
static_assert(SpanSource<SpanHeap>);
static_assert(RemoteSink<RemoteFreeLayer<SpanHeap>>);
static_assert(SlotSource<WordCacheLayer<RemoteFreeLayer<SpanHeap>>>);
static_assert(SlotSource<LocalHeap>);

} // namespace defero::pages
