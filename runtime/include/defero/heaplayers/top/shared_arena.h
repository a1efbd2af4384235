// shared_arena.h - SharedArena: one Arena instance shared by every heap that
// names the same (Arena, Tag), so several K-Bit heaps (one per thread slot)
// carve spans from one window and their chunks share one class numbering.
//
// Guarantee: the instance is constant-initialised (no static-init order
// problem, usable before main); forwarding is inline and free.
#pragma once

#include <cstddef>
#include <cstdint>

#include "defero/heaplayers/heap_layer.h"
#include "defero/heaplayers/top/span_arena.h"

namespace defero {

template <class Arena, class Tag> class SharedArena {
public:
  static constexpr std::size_t kSpanBytes = Arena::kSpanBytes;
  static constexpr std::size_t kWindowBytes = Arena::kWindowBytes;

  static Arena &arena() {
    static constinit Arena instance{};
    return instance;
  }

  void *malloc(std::size_t sz) { return arena().malloc(sz); }
  void free(void *p) { arena().free(p); }
  bool owns(const void *p) const { return arena().owns(p); }
  std::uintptr_t base() const { return arena().base(); }
  std::size_t usedBytes() const { return arena().usedBytes(); }
  std::size_t windowBytes() const { return arena().windowBytes(); }
  SpanPage &page(const void *p) { return arena().page(p); }
  SpanPage &pageAt(std::size_t i) { return arena().pageAt(i); }
  std::size_t pageIndex(const void *p) const { return arena().pageIndex(p); }
  void *pageStart(std::size_t i) const { return arena().pageStart(i); }
  std::uint64_t *bits(std::size_t i) { return arena().bits(i); }
};

} // namespace defero
