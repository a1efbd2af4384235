// buddy_heap.h - BuddyHeap<Engine>: a top heap layer that hands out the
// blocks of a binary buddy system as memory of a real arena, and the
// software engine, SoftwareBuddy (BuddyCore with its free lists' links kept
// inside the free blocks, as Knuth's buddy system keeps them).
//
// An Engine manages block offsets in a heap of 2^H bytes:
//   bool init(std::uint64_t heap_bytes);          // false: cannot
//   std::int64_t alloc(std::uint64_t bytes);      // offset, or -1: no memory
//   bool free(std::uint64_t offset);              // false: invalid, no change
//   std::uint64_t blockSize(std::uint64_t offset);// 0: no allocated block
//   std::uint64_t freeBytes() const;
//   void attach(char *arena);                     // before init
// (HardwareBuddy<Model>, in hw_buddy.h, is the other engine: the Verilated
// RTL decides.)
//
// Guarantees: every block is aligned to its size in the address space (the
// arena is aligned to the heap's size), so mallocAligned(sz, align) needs
// nothing more than a block of max(sz, align) bytes; malloc returns nullptr
// when the buddy system is out of memory; tryFree rejects (and leaves
// untouched) anything but the start of an allocated block. Not thread-safe:
// wrap it in LockedHeap. Never allocates through malloc; the arena's pages
// are taken on first touch and kept (no system call after warm-up).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "defero/buddy/buddy_core.h"
#include "defero/heaplayers/heap_layer.h"
#include "defero/platform/os.h"

namespace defero::buddy {

/// The links of BuddyCore's free lists, in the first 8 bytes of each free
/// block of the arena (the smallest block is 16 bytes).
class ArenaLinks {
public:
  void attach(char *arena, unsigned min_log) {
    arena_ = arena;
    min_log_ = min_log;
  }
  bool reset(std::size_t) { return arena_ != nullptr; }
  std::uint32_t next(std::uint32_t u) const { return load(u, 0); }
  std::uint32_t prev(std::uint32_t u) const { return load(u, 4); }
  void setNext(std::uint32_t u, std::uint32_t v) { store(u, 0, v); }
  void setPrev(std::uint32_t u, std::uint32_t v) { store(u, 4, v); }

private:
  char *at(std::uint32_t u, unsigned field) const {
    return arena_ + (std::uint64_t{u} << min_log_) + field;
  }
  std::uint32_t load(std::uint32_t u, unsigned field) const {
    std::uint32_t v;
    std::memcpy(&v, at(u, field), sizeof v);
    return v;
  }
  void store(std::uint32_t u, unsigned field, std::uint32_t v) {
    std::memcpy(at(u, field), &v, sizeof v);
  }
  char *arena_ = nullptr;
  unsigned min_log_ = 4;
};

/// The software engine: the policy of hw/README.md, executed by BuddyCore.
class SoftwareBuddy {
public:
  static constexpr std::uint64_t kMinBlock = 16;
  void attach(char *arena) { core_.links().attach(arena, log2Exact(kMinBlock)); }
  bool init(std::uint64_t heap_bytes) { return core_.init(heap_bytes, kMinBlock); }
  std::int64_t alloc(std::uint64_t bytes) { return core_.alloc(bytes); }
  bool free(std::uint64_t offset) {
    return core_.free(offset) == BuddyCore<ArenaLinks>::FreeResult::Ok;
  }
  std::uint64_t blockSize(std::uint64_t offset) const { return core_.blockSize(offset); }
  std::uint64_t freeBytes() const { return core_.freeBytes(); }
  BuddyCore<ArenaLinks> &core() { return core_; }

private:
  BuddyCore<ArenaLinks> core_;
};

template <class Engine> class BuddyHeap {
public:
  BuddyHeap() = default;
  BuddyHeap(const BuddyHeap &) = delete;
  BuddyHeap &operator=(const BuddyHeap &) = delete;
  ~BuddyHeap() {
    if (base_)
      os::unmap(base_, heap_);
  }

  /// Reserves an arena of heap_bytes (a power of two), aligned to its size,
  /// and starts the engine over it. False if either fails.
  bool init(std::uint64_t heap_bytes) {
    if (base_ || !isPow2(heap_bytes))
      return false;
    // Twice the size, then trim to the aligned half.
    char *raw = static_cast<char *>(os::map_sparse(2 * heap_bytes));
    if (!raw)
      return false;
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (a + heap_bytes - 1) & ~(heap_bytes - 1);
    if (aligned > a)
      os::unmap(raw, aligned - a);
    if (aligned + heap_bytes < a + 2 * heap_bytes)
      os::unmap(reinterpret_cast<void *>(aligned + heap_bytes),
                a + 2 * heap_bytes - (aligned + heap_bytes));
    base_ = reinterpret_cast<char *>(aligned);
    heap_ = heap_bytes;
    engine_.attach(base_);
    if (!engine_.init(heap_bytes)) {
      os::unmap(base_, heap_);
      base_ = nullptr;
      heap_ = 0;
      return false;
    }
    return true;
  }

  void *malloc(std::size_t sz) {
    const std::int64_t off = engine_.alloc(sz);
    return off < 0 ? nullptr : base_ + off;
  }
  /// A block of at least sz bytes aligned to align (a power of two).
  void *mallocAligned(std::size_t sz, std::size_t align) {
    return malloc(sz > align ? sz : align);
  }
  /// Frees p; false (and nothing changes) unless p is the start of an
  /// allocated block of this heap.
  bool tryFree(void *p) {
    return owns(p) && engine_.free(static_cast<std::uint64_t>(static_cast<char *>(p) - base_));
  }
  void free(void *p) {
    if (p && !tryFree(p))
      os::fatal_pointer("free", p, "not an allocated block of the buddy heap");
  }
  /// The block's size (0 unless p starts an allocated block).
  std::size_t getSize(const void *p) {
    if (!owns(p))
      return 0;
    return engine_.blockSize(
        static_cast<std::uint64_t>(static_cast<const char *>(p) - base_));
  }
  bool owns(const void *p) const {
    return base_ && static_cast<const char *>(p) >= base_ &&
           static_cast<const char *>(p) < base_ + heap_;
  }

  char *base() const { return base_; }
  std::uint64_t heapBytes() const { return heap_; }
  std::uint64_t freeBytes() const { return engine_.freeBytes(); }
  Engine &engine() { return engine_; }

private:
  char *base_ = nullptr;
  std::uint64_t heap_ = 0;
  Engine engine_;
};

static_assert(SizedHeapLayer<BuddyHeap<SoftwareBuddy>>);
static_assert(OwningHeapLayer<BuddyHeap<SoftwareBuddy>>);

} // namespace defero::buddy
