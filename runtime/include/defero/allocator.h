// allocator.h - defero::allocator<T, Partition, Predicate>: a standard
// allocator over a K-Bit heap (the Defero paper's Fig. 2), header-only.
//
//   std::list<int, defero::allocator<int, defero::KBit<12>, defero::Best>> l;
//
// Every allocator type with the same Partition shares one heap (its own
// address window, separate from malloc's), so rebinding and copying
// allocators never changes where memory goes, and all instances compare
// equal. The hint comes through the standard `allocate(n, hint)`:
//  - Best places the object in hint's K-class, else the nearest class;
//  - First ignores the hint (temporal locality, fastest);
//  - Path: the allocator sees one address, not a tree path, so it places
//    near the hint like Best; tree paths reach the runtime through
//    __defero_hint_tree.
//  - Auto behaves as Best when a hint is given, First otherwise.
// Objects larger than 32 KiB (or aligned beyond any size class) come from a
// page-mapped heap.
#pragma once

#include <cstddef>
#include <limits>
#include <new>

#include "defero/heaplayers/threads/locked_heap.h"
#include "defero/heaplayers/threads/spin_lock.h"
#include "defero/heaplayers/top/mmap_heap.h"
#include "defero/heaplayers/top/shared_arena.h"
#include "defero/heaplayers/top/span_arena.h"
#include "defero/kbit/kbit_heap.h"
#include "defero/kbit/predicate.h"

namespace defero {

/// The K-Bit partition with precision K (K-class = 2^(32-K) bytes).
template <unsigned K> struct KBit {
  static_assert(K <= 32, "K counts bits of a 32-bit window: 0..32");
  static constexpr unsigned k = K;
};

namespace detail {
template <class Partition> struct AllocatorHeaps {
  // 16 GiB of address space per partition (reserved on first use).
  using Arena = SharedArena<SpanArena<std::size_t{1} << 34, 65536>, Partition>;
  using Small = LockedHeap<SpinLock, KBitHeap<Arena, Partition::k>>;

  static Small &small() {
    static Small heap;
    return heap;
  }
  static MmapHeap &large() {
    static MmapHeap heap;
    return heap;
  }
};
} // namespace detail

template <class T, class Partition = KBit<20>, class Pred = Best>
class allocator {
  using Heaps = detail::AllocatorHeaps<Partition>;

public:
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using is_always_equal = std::true_type;
  using partition_type = Partition;
  using predicate_type = Pred;
  /// The patched libstdc++ of stl-patch/ passes node hints to allocators
  /// that declare this, through allocate(n, hint).
  using defero_hint_tag = void;

  template <class U> struct rebind {
    using other = allocator<U, Partition, Pred>;
  };

  allocator() noexcept = default;
  template <class U>
  allocator(const allocator<U, Partition, Pred> &) noexcept {}

  [[nodiscard]] T *allocate(std::size_t n) { return allocate(n, nullptr); }

  [[nodiscard]] T *allocate(std::size_t n, const void *hint) {
    if (n > std::numeric_limits<std::size_t>::max() / sizeof(T))
      throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
    void *p;
    // Over-aligned types use the first class whose chunks are aligned
    // enough (power-of-two classes are aligned to their size).
    const unsigned cls = alignof(T) <= kMinAlignment
                             ? (bytes <= kbit::kMaxSmallBytes ? kbit::classOf(bytes)
                                                              : kbit::kNumClasses)
                             : kbit::alignedClassOf(bytes, alignof(T));
    if (cls == kbit::kNumClasses) {
      p = Heaps::large().mallocAligned(bytes, alignof(T));
    } else {
      const bool near = Pred::value != Predicate::First && hint;
      p = Heaps::small().withLock([&](auto &h) {
        return h.allocateClass(cls, near ? Predicate::Best : Predicate::First,
                               hint, 0, 0);
      });
    }
    if (!p)
      throw std::bad_alloc();
    return static_cast<T *>(p);
  }

  void deallocate(T *p, std::size_t) noexcept {
    if (!p)
      return;
    if (Heaps::small().owns(p))
      Heaps::small().withLock([&](auto &h) { h.release(p, "defero::allocator::deallocate"); });
    else
      Heaps::large().free(p);
  }

  std::size_t max_size() const noexcept {
    return std::numeric_limits<std::size_t>::max() / sizeof(T);
  }

  /// The K-class key of p in this partition's window (tests, diagnostics).
  static std::uintptr_t classOf(const void *p) {
    return Heaps::small().classKey(p);
  }

  template <class U>
  friend bool operator==(const allocator &, const allocator<U, Partition, Pred> &) {
    return true;
  }
};

} // namespace defero
