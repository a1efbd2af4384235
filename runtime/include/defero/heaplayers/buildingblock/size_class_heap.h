// size_class_heap.h - SizeClassHeap: segregated size classes (Weinstock's
// segregated lists; the SGI STL allocator that the Defero paper starts
// from). A request is rounded up to its class and served from that class's
// free list; an empty list, or a request above the largest class, goes to
// Super. There is no splitting or coalescing between classes.
//
// Super must provide getSize (e.g. SizeHeaderHeap), which free uses to find
// the class. O(1) malloc and free for classed sizes.
#pragma once

#include <cstddef>

#include "defero/heaplayers/heap_layer.h"
#include "defero/kbit/size_classes.h"

namespace defero {

template <class Super> class SizeClassHeap : public Super {
  static_assert(SizedHeapLayer<Super>, "SizeClassHeap needs Super::getSize");

public:
  void *malloc(std::size_t sz) {
    if (sz > kbit::kMaxSmallBytes)
      return Super::malloc(sz);
    const unsigned c = kbit::classOf(sz);
    if (Node *n = lists_[c]) {
      lists_[c] = n->next;
      return n;
    }
    return Super::malloc(kbit::kClassBytes[c]);
  }
  void free(void *p) {
    if (!p)
      return;
    const std::size_t sz = Super::getSize(p);
    if (sz > kbit::kMaxSmallBytes || sz != kbit::kClassBytes[kbit::classOf(sz)]) {
      Super::free(p);
      return;
    }
    Node *n = static_cast<Node *>(p);
    const unsigned c = kbit::classOf(sz);
    n->next = lists_[c];
    lists_[c] = n;
  }
  using Super::getSize;

private:
  struct Node {
    Node *next;
  };
  Node *lists_[kbit::kNumClasses] = {};
};

static_assert(SizedHeapLayer<SizeClassHeap<detail::ProbeHeap>>);

} // namespace defero
