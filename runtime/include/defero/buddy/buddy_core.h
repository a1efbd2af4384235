// buddy_core.h - Knuth's binary buddy system with the exact policy of the
// hardware allocators in hw/ (RBS and OBS, Donahue et al. 2002), over block
// offsets in a heap of 2^H bytes whose smallest block is 2^M bytes.
//
// The policy (hw/README.md states it for the RTL, which must agree with
// this code operation by operation):
//  - a request of s bytes takes a block of level k = max(M, ceil(log2 s));
//    s = 0 is served as 1 byte; s > 2^H cannot be served;
//  - alloc(k): the smallest level j >= k whose free list is not empty
//    (OBS finds it at once, RBS scans up from k); its head block B leaves
//    the list; while j > k: j -= 1 and B's upper half, B + 2^j, goes to the
//    head of list j. B (the lower half) is returned. No level: out of memory;
//  - free(B): B must be the start of an allocated block, else the free is
//    invalid (never allocated, already freed, inside a block, outside the
//    heap) and nothing changes. Then, from B's level k up to H - 1: if the
//    buddy B ^ 2^k is a free block of level k, it leaves its list and B
//    becomes min(B, buddy) at level k + 1 (eager coalescing). B goes to the
//    head of the list of its final level.
//  - every list is doubly linked (a block leaves the middle of its list when
//    its buddy is freed) and LIFO at the head.
//
// Storage: one tag byte per smallest block (free block start and its level,
// allocated block start and its level, or neither), and the links of each
// free block, kept by a Links policy: VectorLinks (side arrays: the model the
// RTL is tested against) or in the free block itself (buddy_heap.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "defero/platform/os.h"

namespace defero::buddy {

/// A zero-filled array in its own mapping (never malloc: this code runs
/// inside the process allocator).
template <class T> class MappedArray {
public:
  MappedArray() = default;
  MappedArray(const MappedArray &) = delete;
  MappedArray &operator=(const MappedArray &) = delete;
  ~MappedArray() { release(); }
  /// n elements, all zero bytes; false if the mapping failed.
  bool reset(std::size_t n) {
    if (n && n == n_) { // the same size again: clear, keep the mapping
      std::memset(static_cast<void *>(p_), 0, n * sizeof(T));
      return true;
    }
    release();
    if (!n)
      return true;
    p_ = static_cast<T *>(os::map_sparse(n * sizeof(T)));
    n_ = p_ ? n : 0;
    return p_ != nullptr;
  }
  T &operator[](std::size_t i) { return p_[i]; }
  const T &operator[](std::size_t i) const { return p_[i]; }
  std::size_t size() const { return n_; }

private:
  void release() {
    if (p_)
      os::unmap(p_, n_ * sizeof(T));
    p_ = nullptr;
    n_ = 0;
  }
  T *p_ = nullptr;
  std::size_t n_ = 0;
};

inline constexpr std::uint32_t kNone = 0xffffffffu; // no block (list ends)

/// log2 of a power of two; ceil(log2 n) for any n >= 1.
constexpr unsigned log2Exact(std::uint64_t x) {
  unsigned l = 0;
  while ((std::uint64_t{1} << l) < x)
    ++l;
  return l;
}
constexpr bool isPow2(std::uint64_t x) { return x && !(x & (x - 1)); }

/// Links of free blocks in side arrays, indexed by smallest-block number
/// (only a free block's entries are meaningful).
class VectorLinks {
public:
  bool reset(std::size_t units) { return next_.reset(units) && prev_.reset(units); }
  std::uint32_t next(std::uint32_t u) const { return next_[u]; }
  std::uint32_t prev(std::uint32_t u) const { return prev_[u]; }
  void setNext(std::uint32_t u, std::uint32_t v) { next_[u] = v; }
  void setPrev(std::uint32_t u, std::uint32_t v) { prev_[u] = v; }

private:
  MappedArray<std::uint32_t> next_, prev_;
};

/// Statistics of the last operation, in the RTL's terms: how many free
/// lists RBS would look at to find a block, and how many split or merge
/// steps the operation made (the Block time of alloc, coalescing of free).
struct OpSteps {
  unsigned lists_scanned = 0;
  unsigned splits = 0;
  unsigned merges = 0;
};

template <class Links = VectorLinks> class BuddyCore {
public:
  static constexpr unsigned kMaxLevels = 40;

  /// A heap of heap_bytes (a power of two) with smallest blocks of
  /// min_block bytes (a power of two, >= 16, <= heap_bytes, and at most
  /// 2^32 - 1 smallest blocks). valid() says whether the sizes were.
  BuddyCore(std::uint64_t heap_bytes, std::uint64_t min_block) { init(heap_bytes, min_block); }
  BuddyCore() = default;

  static bool validSizes(std::uint64_t heap_bytes, std::uint64_t min_block) {
    return isPow2(heap_bytes) && isPow2(min_block) && min_block >= 16 &&
           min_block <= heap_bytes && heap_bytes / min_block < kNone &&
           log2Exact(heap_bytes) - log2Exact(min_block) < kMaxLevels;
  }

  bool init(std::uint64_t heap_bytes, std::uint64_t min_block) {
    valid_ = validSizes(heap_bytes, min_block);
    if (!valid_)
      return false;
    hlog_ = log2Exact(heap_bytes);
    mlog_ = log2Exact(min_block);
    heap_ = heap_bytes;
    units_ = static_cast<std::uint32_t>(heap_bytes >> mlog_);
    for (auto &h : head_)
      h = kNone;
    valid_ = tags_.reset(units_) && links_.reset(units_);
    if (!valid_)
      return false;
    free_bytes_ = 0;
    pushFree(0, levels() - 1);
    return true;
  }

  bool valid() const { return valid_; }
  Links &links() { return links_; }
  std::uint64_t heapBytes() const { return heap_; }
  std::uint64_t minBlock() const { return std::uint64_t{1} << mlog_; }
  /// Levels 0 .. levels()-1 hold blocks of minBlock() << level bytes.
  unsigned levels() const { return hlog_ - mlog_ + 1; }
  std::uint64_t freeBytes() const { return free_bytes_; }

  /// The level a request of `bytes` needs, or levels() if it cannot fit.
  unsigned levelFor(std::uint64_t bytes) const {
    if (bytes > heap_)
      return levels();
    const unsigned l = log2Exact(bytes ? bytes : 1);
    return l <= mlog_ ? 0 : l - mlog_;
  }

  /// Allocates a block for `bytes`; its offset, or -1 when out of memory.
  std::int64_t alloc(std::uint64_t bytes) {
    steps_ = {};
    const unsigned k = levelFor(bytes);
    if (!valid_ || k >= levels())
      return -1;
    unsigned j = k;
    for (;;) {
      ++steps_.lists_scanned;
      if (head_[j] != kNone)
        break;
      if (++j == levels())
        return -1;
    }
    std::uint32_t b = head_[j];
    unlink(b, j);
    while (j > k) {
      --j;
      pushFree(b + (std::uint32_t{1} << j), j);
      ++steps_.splits;
    }
    tags_[b] = kBusy | static_cast<std::uint8_t>(k);
    return static_cast<std::int64_t>(std::uint64_t{b} << mlog_);
  }

  enum class FreeResult { Ok, Invalid };

  /// Frees the block at `offset`; Invalid (and no change) unless it is the
  /// start of an allocated block.
  FreeResult free(std::uint64_t offset) {
    steps_ = {};
    const std::uint64_t u64 = offset >> mlog_;
    if (!valid_ || offset >= heap_ || (offset & (minBlock() - 1)) ||
        !(tags_[u64] & kBusy))
      return FreeResult::Invalid;
    std::uint32_t b = static_cast<std::uint32_t>(u64);
    unsigned k = tags_[b] & kLevelMask;
    tags_[b] = 0;
    while (k + 1 < levels()) {
      const std::uint32_t buddy = b ^ (std::uint32_t{1} << k);
      if (tags_[buddy] != (kFree | k))
        break;
      unlink(buddy, k);
      tags_[buddy] = 0;
      b = b < buddy ? b : buddy;
      ++k;
      ++steps_.merges;
    }
    pushFree(b, k);
    return FreeResult::Ok;
  }

  /// The size of the allocated block at `offset` (0 if there is none).
  std::uint64_t blockSize(std::uint64_t offset) const {
    if (!valid_ || offset >= heap_ || (offset & (minBlock() - 1)))
      return 0;
    const std::uint8_t t = tags_[offset >> mlog_];
    return (t & kBusy) ? minBlock() << (t & kLevelMask) : 0;
  }

  /// Whether list `level` is empty (the RTL's "empty flag").
  bool listEmpty(unsigned level) const { return head_[level] == kNone; }
  const OpSteps &lastSteps() const { return steps_; }

  /// The offsets on list `level`, head first.
  std::vector<std::uint64_t> freeList(unsigned level) {
    std::vector<std::uint64_t> out;
    for (std::uint32_t u = head_[level]; u != kNone && out.size() <= units_;
         u = links_.next(u))
      out.push_back(std::uint64_t{u} << mlog_);
    return out;
  }

  /// Checks the structure: blocks tile the heap without overlap, each is
  /// aligned to its size, every free block is on the list of its level
  /// exactly once (and the lists are consistently linked), no two free
  /// buddies are left uncoalesced, and freeBytes() adds up. Empty string
  /// when all hold, else what broke.
  std::string check() {
    if (!valid_)
      return "not initialised";
    std::uint64_t free_seen = 0;
    std::vector<std::uint8_t> on_list(units_, 0); // (tests only: allocates)
    for (unsigned l = 0; l < levels(); ++l) {
      std::uint32_t prev = kNone;
      std::size_t n = 0;
      for (std::uint32_t u = head_[l]; u != kNone; u = links_.next(u)) {
        if (++n > units_)
          return "list " + std::to_string(l) + " has a cycle";
        if (tags_[u] != (kFree | l))
          return "block " + std::to_string(u) + " on list " + std::to_string(l) +
                 " is not a free block of that level";
        if (links_.prev(u) != prev)
          return "list " + std::to_string(l) + ": bad back link at " + std::to_string(u);
        if (on_list[u]++)
          return "block " + std::to_string(u) + " is on a list twice";
        prev = u;
        free_seen += minBlock() << l;
      }
    }
    if (free_seen != free_bytes_)
      return "free bytes " + std::to_string(free_bytes_) + " but lists hold " +
             std::to_string(free_seen);
    std::uint64_t covered = 0;
    for (std::uint32_t u = 0; u < units_;) {
      const std::uint8_t t = tags_[u];
      if (!(t & (kFree | kBusy)))
        return "no block starts at unit " + std::to_string(u);
      const unsigned l = t & kLevelMask;
      const std::uint32_t span = std::uint32_t{1} << l;
      if (u & (span - 1))
        return "block at unit " + std::to_string(u) + " is not aligned to its size";
      if ((t & kFree) && !on_list[u])
        return "free block at unit " + std::to_string(u) + " is on no list";
      for (std::uint32_t v = u + 1; v < u + span && v < units_; ++v)
        if (tags_[v])
          return "block at unit " + std::to_string(v) + " overlaps the one at " +
                 std::to_string(u);
      if ((t & kFree) && l + 1 < levels()) {
        const std::uint32_t buddy = u ^ span;
        if (tags_[buddy] == (kFree | l))
          return "free buddies at units " + std::to_string(u) + " and " +
                 std::to_string(buddy) + " were not coalesced";
      }
      covered += span;
      u += span;
    }
    if (covered != units_)
      return "blocks do not tile the heap";
    for (unsigned l = 0; l < levels(); ++l)
      if (listEmpty(l) != (head_[l] == kNone))
        return "empty flag of list " + std::to_string(l) + " is wrong";
    return {};
  }

private:
  static constexpr std::uint8_t kFree = 0x80, kBusy = 0x40, kLevelMask = 0x3f;

  void pushFree(std::uint32_t b, unsigned l) {
    tags_[b] = kFree | static_cast<std::uint8_t>(l);
    links_.setPrev(b, kNone);
    links_.setNext(b, head_[l]);
    if (head_[l] != kNone)
      links_.setPrev(head_[l], b);
    head_[l] = b;
    free_bytes_ += minBlock() << l;
  }

  void unlink(std::uint32_t b, unsigned l) {
    const std::uint32_t n = links_.next(b), p = links_.prev(b);
    if (p != kNone)
      links_.setNext(p, n);
    else
      head_[l] = n;
    if (n != kNone)
      links_.setPrev(n, p);
    free_bytes_ -= minBlock() << l;
  }

  bool valid_ = false;
  unsigned hlog_ = 0, mlog_ = 0;
  std::uint64_t heap_ = 0, free_bytes_ = 0;
  std::uint32_t units_ = 0;
  std::uint32_t head_[kMaxLevels] = {};
  MappedArray<std::uint8_t> tags_;
  Links links_;
  OpSteps steps_;
};

} // namespace defero::buddy
