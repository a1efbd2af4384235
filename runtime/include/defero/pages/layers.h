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

#include "defero/pages/slot_page.h"

namespace defero::pages {

/// A heap of spans: the next Current span of a class, the owner's free of
/// a slot, live bytes published.
template <class H>
concept SpanSource = requires(H &h, SlotPage *pg, unsigned u, const char *call) {
  { h.nextCurrent(u) } -> std::same_as<SlotPage *>;
  h.freeLocal(pg, u, call);
  h.noteRoom(pg, u);
  h.publishLive();
  { h.current(u) } -> std::same_as<SlotPage *>;
};

/// A heap that takes back the blocks other threads free.
template <class H>
concept RemoteSink = SpanSource<H> && requires(H &h, void *p) {
  h.collectRemote();
  h.flushOutbox();
  { h.hasOutbox() } -> std::same_as<bool>;
  h.freeRemote(p);
};

/// A heap that hands out unhinted slots of a class (and gives its cached
/// ones back before a placement search).
template <class H>
concept SlotSource = RemoteSink<H> && requires(H &h, unsigned u, const SlotPage *pg) {
  { h.malloc(u) } -> std::same_as<void *>;
  { h.hasCached(u) } -> std::same_as<bool>;
  h.uncache(u);
  { h.isFree(pg, u) } -> std::same_as<bool>;
};

} // namespace defero::pages
