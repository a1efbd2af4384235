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
// onto the free stack about 33 (the owner's block of a span where no hint
// placed), into a placed span's bitmap by its owner 32, another heap's
// block a link into the outbox (one CAS per 29). Through the fused entry, a hinted
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
  /// Records p (slot `slot` of pg, answering a request of sz bytes), just
  /// placed for `container` by a hint of kind row + 1 (the placed[] row of
  /// the continuations that may follow), as the thread's recent node; p
  /// null: none. The streak of the last one is counted first.
  void noteRecent(const void *container, const void *p, SlotPage *pg, std::uint64_t slot,
                  std::size_t sz, unsigned row = 0) {
    if (const std::uint64_t n = recent.slot - recent.first) // (the streak ending)
      notePlacedBytes(n * recent.page->slot_bytes);
    endStreak();
    recent.container = container;
    recent.node = p;
    if (!p || !pg) {
      __atomic_store_n(&recent.page, &kNoPage, __ATOMIC_RELAXED);
      recent.size = ~std::size_t{0};
      return;
    }
    __atomic_store_n(&recent.slot, slot, __ATOMIC_RELAXED);
    __atomic_store_n(&recent.first, slot, __ATOMIC_RELAXED);
    __atomic_store_n(&recent.row, static_cast<std::uint8_t>(row), __ATOMIC_RELAXED);
    __atomic_store_n(&recent.page, pg, __ATOMIC_RELEASE); // (a plain store on x86-64)
    recent.size = recentKey(sz, row);
  }
  /// The container of this thread's last container hint that hopped
  /// (hopsContainers), and the recent node then.
  const void *hop_container = nullptr, *hop_after = nullptr;
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
