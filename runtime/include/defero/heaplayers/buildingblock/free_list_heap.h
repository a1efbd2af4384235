// free_list_heap.h - FreeListHeap: keeps freed objects on a LIFO list and
// hands them out again before asking Super.
//
// For one object size (use it under a size-class layer): every malloc is
// assumed to ask for at most the size of the objects on the list, which is
// checked through Super::getSize. O(1) malloc and free; the list threads
// through the freed objects themselves (no metadata).
#pragma once

#include <cstddef>

#include "defero/heaplayers/heap_layer.h"

namespace defero {

template <class Super> class FreeListHeap : public Super {
  static_assert(SizedHeapLayer<Super>, "FreeListHeap checks sizes via Super");

public:
  void *malloc(std::size_t sz) {
    if (head_ && Super::getSize(head_) >= sz) {
      Node *n = head_;
      head_ = n->next;
      --length_;
      return n;
    }
    return Super::malloc(sz);
  }
  void free(void *p) {
    if (!p)
      return;
    Node *n = static_cast<Node *>(p);
    n->next = head_;
    head_ = n;
    ++length_;
  }
  std::size_t length() const { return length_; }

private:
  struct Node {
    Node *next;
  };
  Node *head_ = nullptr;
  std::size_t length_ = 0;
};

static_assert(SizedHeapLayer<FreeListHeap<detail::ProbeHeap>>);

} // namespace defero
