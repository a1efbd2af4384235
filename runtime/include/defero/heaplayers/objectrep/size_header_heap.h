// size_header_heap.h - SizeHeaderHeap: records each object's requested size
// in a 16-byte header in front of it, so getSize works over any Super.
//
// Guarantees: the 16-byte alignment of Super is kept; getSize returns the
// size passed to malloc. Cost: 16 bytes per object.
#pragma once

#include <cstddef>

#include "defero/heaplayers/heap_layer.h"

namespace defero {

template <class Super> class SizeHeaderHeap : public Super {
  struct alignas(kMinAlignment) Header {
    std::size_t size;
  };
  static_assert(sizeof(Header) == kMinAlignment);

public:
  void *malloc(std::size_t sz) {
    if (sz > static_cast<std::size_t>(-1) - sizeof(Header))
      return nullptr;
    auto *h = static_cast<Header *>(Super::malloc(sz + sizeof(Header)));
    if (!h)
      return nullptr;
    h->size = sz;
    return h + 1;
  }
  void free(void *p) {
    if (p)
      Super::free(static_cast<Header *>(p) - 1);
  }
  static std::size_t getSize(const void *p) {
    return (static_cast<const Header *>(p) - 1)->size;
  }
};

static_assert(SizedHeapLayer<SizeHeaderHeap<detail::ProbeHeap>>);

} // namespace defero
