// bump_heap.h - BumpHeap: carves objects from ChunkBytes-sized chunks that it
// gets from Super, by bumping a pointer. free() does nothing; memory comes
// back only when the whole heap goes (a region / zone, as Heap Layers'
// ZoneHeap).
//
// Guarantees: 16-byte alignment; requests larger than a chunk go straight to
// Super; O(1) malloc.
#pragma once

#include <cstddef>

#include "defero/heaplayers/heap_layer.h"

namespace defero {

template <std::size_t ChunkBytes, class Super> class BumpHeap : public Super {
  static_assert(ChunkBytes >= 64 && ChunkBytes % kMinAlignment == 0);

public:
  void *malloc(std::size_t sz) {
    sz = (sz + kMinAlignment - 1) & ~(kMinAlignment - 1);
    if (sz == 0)
      sz = kMinAlignment;
    if (sz > ChunkBytes)
      return Super::malloc(sz);
    if (sz > static_cast<std::size_t>(end_ - next_)) {
      char *c = static_cast<char *>(Super::malloc(ChunkBytes));
      if (!c)
        return nullptr;
      next_ = c;
      end_ = c + ChunkBytes;
    }
    void *p = next_;
    next_ += sz;
    return p;
  }
  void free(void *) {}

private:
  char *next_ = nullptr;
  char *end_ = nullptr;
};

static_assert(HeapLayer<BumpHeap<65536, detail::ProbeHeap>>);

} // namespace defero
