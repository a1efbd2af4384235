// layers.h - the concepts the layers of a thread's small-object heap are
// checked against (pages/local_heap.h composes them):
//
//   LocalHeap = PlacementLayer<WordCacheLayer<RemoteFreeLayer<SpanHeap>>>
//
//   SpanHeap         spans per size class (Current, Avail), free by the
//                    owner into a span's bitmap, owner counters
//   RemoteFreeLayer  frees by other threads: a lock-free list per heap, an
//                    outbox per thread (one CAS per batch)
//   WordCacheLayer   unhinted malloc from a LIFO free stack per class, else
//                    from one bitmap word claimed whole
//   PlacementLayer   the K-Bit placement: beside an anchor, a container's
//                    run, never across a K-class
//
// Each layer states, as a concept on its Super, what it uses from below, so
// the paper's layering is checked by the compiler as Heap Layers' is.
#pragma once

#include <concepts>
#include <cstdint>

#include "defero/pages/slot_page.h"

namespace defero::pages {

/// A heap of spans: the next Current span of a class, the owner's free of
/// a slot, live bytes published; for the placement above, the spans it
/// cuts runs and cells from (Empty ones, mostly free ones, one made over
/// from another class, one with a free group of slots), the Avail list it
/// gives a span back to, and each class's slots held and most taken (for
/// PlacementLayer::overgrown); for the word cache, how many spans it took.
/// (The layers above also read its owner counters `count`, and the
/// protected `totals_`, `k_` and `class_shift_`.)
template <class H>
concept SpanSource = requires(H &h, const H &ch, SlotPage *pg, unsigned u, unsigned &slot,
                              const char *call) {
  { h.nextCurrent(u) } -> std::same_as<SlotPage *>;
  { h.replaceCurrent(u) } -> std::same_as<SlotPage *>;
  { h.current(u) } -> std::same_as<SlotPage *>;
  h.freeLocal(pg, u, call);
  h.noteRoom(pg, u);
  h.publishLive();
  { h.takeEmpty(u) } -> std::same_as<SlotPage *>;
  { h.takeMostlyFree(u, u, true) } -> std::same_as<SlotPage *>;
  { h.takeOtherEmptyOrCarve(u) } -> std::same_as<SlotPage *>;
  { h.takeWithGroup(u, u, slot) } -> std::same_as<SlotPage *>;
  h.pushAvail(pg);
  { ch.heldSlots(u) } -> std::convertible_to<std::uint64_t>;
  { h.noteTaken(u) } -> std::convertible_to<std::uint64_t>;
  { ch.peakTaken(u) } -> std::convertible_to<std::uint64_t>;
  { H::kSlotsPerSpan[u] } -> std::convertible_to<std::uint32_t>;
  { ch.takenSince() } -> std::convertible_to<std::uint32_t>;
  h.resetTaken();
  { H::kClasses } -> std::convertible_to<unsigned>;
  { H::kReclaimSpans } -> std::convertible_to<std::uint32_t>;
  h.retireCurrent(u);
};

/// A heap that takes back the blocks other threads free, and sends the
/// blocks its thread frees to theirs.
template <class H>
concept RemoteSink = SpanSource<H> && requires(H &h, void *p) {
  h.collectRemote();
  h.flushOutbox();
  { h.hasOutbox() } -> std::same_as<bool>;
  h.freeRemote(p);
  h.freeToOther(&h, p);
};

/// A heap that hands out unhinted slots of a class (and gives its cached
/// ones back before a placement search): for the placement above, also
/// its free stacks given back to the spans, and the frees of a class.
template <class H>
concept SlotSource = RemoteSink<H> && requires(H &h, const H &ch, unsigned u,
                                               const SlotPage *pg, std::uint64_t n) {
  { h.malloc(u) } -> std::same_as<void *>;
  { h.hasCached(u) } -> std::same_as<bool>;
  h.uncache(u);
  { ch.isFree(pg, u) } -> std::same_as<bool>;
  h.flushStack(u, n);
  h.reclaimIfGrowing(u);
  { ch.freesOf(u) } -> std::convertible_to<std::uint64_t>;
};

} // namespace defero::pages
