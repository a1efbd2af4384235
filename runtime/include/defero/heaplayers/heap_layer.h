// heap_layer.h - what a heap layer must provide.
//
// A layer is a mixin, `template <class Super> class XHeap : public Super`,
// composed as a type expression (Berger, Zorn, McKinley, PLDI 2001). Every
// layer header ends with a static_assert that an instance satisfies these
// concepts.
#pragma once

#include <concepts>
#include <cstddef>

namespace defero {

/// The minimum: allocate and release memory.
template <class H>
concept HeapLayer = requires(H h, std::size_t sz, void *p) {
  { h.malloc(sz) } -> std::same_as<void *>;
  { h.free(p) } -> std::same_as<void>;
};

/// A heap that can tell the usable size of an object it handed out.
template <class H>
concept SizedHeapLayer = HeapLayer<H> && requires(H h, void *p) {
  { h.getSize(p) } -> std::convertible_to<std::size_t>;
};

/// A heap that can tell whether it owns a pointer (needed to route frees
/// between several heaps, and to reject foreign pointers).
template <class H>
concept OwningHeapLayer = HeapLayer<H> && requires(const H h, const void *p) {
  { h.owns(p) } -> std::same_as<bool>;
};

/// The alignment every layer's malloc guarantees unless it says otherwise.
inline constexpr std::size_t kMinAlignment = 16;

namespace detail {
/// A declared-only heap with the full interface: layer headers instantiate
/// themselves over it in a static_assert, so a layer that stops meeting the
/// concepts fails to compile where it is defined.
struct ProbeHeap {
  void *malloc(std::size_t);
  void free(void *);
  std::size_t getSize(const void *);
  bool owns(const void *) const;
};
} // namespace detail

} // namespace defero
