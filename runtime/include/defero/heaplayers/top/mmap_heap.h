// mmap_heap.h - MmapHeap: every object is its own anonymous mapping, and a
// registry remembers each one.
//
// Used for large objects. The registry makes free exact: a pointer this heap
// did not map is reported, never unmapped; getSize is the mapping's length.
// It is a two-level page map (tcmalloc's PageMap): a root of leaf pointers
// and leaves of one 64-bit entry per 4 KiB page, the mapping's length at
// its first page and 0 elsewhere, both reserved sparse and committed as
// they are touched. Registering, looking up and unregistering a block are
// an atomic store, load and exchange on its entry, with no lock: two
// threads freeing the same block cannot both succeed, and threads freeing
// different blocks never wait for each other. Only a new leaf (one per
// 4 GiB of address space the mappings land in) takes a lock.
//
// Freed mappings of up to kCacheMaxBlock bytes are kept (at most
// kCacheSlots of them, kCacheBytes in all) and handed out again to a request
// they fit within a factor of two, saving the mmap, the page faults and the
// munmap of programs that churn mid-sized buffers. The cache files them in
// size buckets (one per page count up to 256 KiB, four per doubling above),
// LIFO, with a bitmap of the non-empty buckets, so a take or a put costs a
// few instructions however many are cached; its records live out of band,
// so a write to a freed block cannot corrupt it. A cached mapping is not in
// the registry, so freeing it again is still reported. The cache has a
// spin lock of its own. A caller with a cache of its own (a thread's) uses
// unregister, adopt and release instead of free and malloc.
//
// Guarantees: page alignment (aligned malloc goes up to any power of two);
// fresh mappings are zero-filled (mallocAligned says whether a block is
// fresh); thread-safe; no headers in front of the object.
// Cost: a bucket lookup under the cache's lock, else one mmap, per malloc;
// an atomic exchange and a cache put per free.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "defero/heaplayers/heap_layer.h"
#include "defero/heaplayers/threads/spin_lock.h"
#include "defero/platform/os.h"

namespace defero {

class MmapHeap {
public:
  constexpr MmapHeap() = default;

  static constexpr std::size_t kCacheSlots = 512;
  static constexpr std::size_t kCacheMaxBlock = std::size_t{4} << 20;
  static constexpr std::size_t kCacheBytes = std::size_t{32} << 20;

  void *malloc(std::size_t sz) { return mallocAligned(sz, os::kPageBytes); }

  /// Maps at least sz bytes aligned to `align` (a power of two). If `fresh`
  /// is given it tells whether the block is a new (zero-filled) mapping; if
  /// `got` is, the block's size (getSize) without a second look-up.
  void *mallocAligned(std::size_t sz, std::size_t align, bool *fresh = nullptr,
                      std::size_t *got = nullptr) {
    if (sz == 0)
      sz = 1;
    if (align < os::kPageBytes)
      align = os::kPageBytes;
    const std::size_t bytes = roundUp(sz, os::kPageBytes);
    if (bytes < sz || bytes + align < bytes)
      return nullptr;
    if (fresh)
      *fresh = true;
    if (align == os::kPageBytes && bytes <= kCacheMaxBlock) {
      std::lock_guard<SpinLock> guard(lock_);
      if (void *p = takeCachedLocked(bytes, got)) {
        if (fresh)
          *fresh = false;
        return p;
      }
    }
    std::size_t mapped = bytes + (align > os::kPageBytes ? align : 0);
    char *m = static_cast<char *>(os::map(mapped));
    if (!m)
      return nullptr;
    char *p = m;
    if (align > os::kPageBytes) { // trim to the aligned sub-range
      auto a = reinterpret_cast<std::uintptr_t>(m);
      p = reinterpret_cast<char *>(roundUp(a, align));
      if (p > m)
        os::unmap(m, static_cast<std::size_t>(p - m));
      const std::size_t tail = mapped - static_cast<std::size_t>(p - m) - bytes;
      if (tail)
        os::unmap(p + bytes, tail);
    }
    if (!adopt(p, bytes)) {
      os::unmap(p, bytes);
      return nullptr;
    }
    mapped_bytes_ += bytes;
    if (got)
      *got = bytes;
    return p;
  }

  /// Unmaps (or caches) p. Returns false (and touches nothing) if p is not
  /// one of ours.
  bool tryFree(void *p) { return freeSized(p) != 0; }

  /// tryFree that says how many bytes the block had (0: not ours, nothing
  /// touched), for callers that count them.
  std::size_t freeSized(void *p) {
    const std::size_t bytes = unregister(p);
    if (bytes)
      release(p, bytes);
    return bytes;
  }

  void free(void *p) {
    if (p && !tryFree(p))
      os::fatal_pointer("free", p, "pointer not allocated by this heap");
  }

  /// Takes p, a live block, out of the registry and says its length (0:
  /// not ours or not live, nothing touched). The caller then owns the
  /// mapping: it must adopt it again or release it.
  std::size_t unregister(void *p) {
    std::uint64_t *e = entryFor(p, false);
    return e ? static_cast<std::size_t>(Entry(*e).exchange(0, std::memory_order_acq_rel)) : 0;
  }
  /// Puts a mapping of `bytes` at p that the caller took with unregister
  /// back in the registry (a block handed out again). False only when the
  /// registry cannot get memory for a new leaf.
  bool adopt(void *p, std::size_t bytes) {
    std::uint64_t *e = entryFor(p, true);
    if (!e)
      return false;
    Entry(*e).store(bytes, std::memory_order_release);
    return true;
  }
  /// Caches or unmaps a mapping the caller took with unregister.
  void release(void *p, std::size_t bytes) {
    {
      std::lock_guard<SpinLock> guard(lock_);
      if (cacheLocked(p, bytes))
        return;
    }
    mapped_bytes_ -= bytes;
    os::unmap(p, bytes);
  }

  /// Unmaps the tail of a mapping the caller took with unregister, past
  /// its first `bytes` (page multiples, bytes <= have).
  void trim(void *p, std::size_t have, std::size_t bytes) {
    if (bytes >= have)
      return;
    os::unmap(static_cast<char *>(p) + bytes, have - bytes);
    mapped_bytes_ -= have - bytes;
  }

  /// Grows or shrinks an object in place or by moving its pages (no copy).
  /// Returns nullptr (object unchanged) on failure or if p is not ours.
  void *remap(void *p, std::size_t sz) {
    const std::size_t bytes = roundUp(sz ? sz : 1, os::kPageBytes);
    if (bytes < sz)
      return nullptr;
    const std::size_t old = unregister(p);
    if (old == 0)
      return nullptr;
    void *q = os::remap(p, old, bytes);
    if (!q) {
      adopt(p, old); // (its leaf exists: it held the entry)
      return nullptr;
    }
    if (!adopt(q, bytes))
      os::fatal_pointer("realloc", q, "out of memory for the large-block registry (the block moved)");
    mapped_bytes_.fetch_add(bytes - old); // one step: no reader sees both
    return q;
  }

  std::size_t getSize(const void *p) const {
    std::uint64_t *e = entryFor(p, false);
    return e ? static_cast<std::size_t>(Entry(*e).load(std::memory_order_acquire)) : 0;
  }

  bool owns(const void *p) const { return getSize(p) != 0; }

  /// Bytes mapped now (cached mappings included); read without the lock.
  std::size_t mappedBytes() const {
    return mapped_bytes_.load(std::memory_order_relaxed);
  }
  void lockHeap() {
    lock_.lock();
    grow_lock_.lock();
  }
  void unlockHeap() {
    grow_lock_.unlock();
    lock_.unlock();
  }

private:
  // The registry: page index (address >> 12, 36 bits of a 48-bit user
  // address) = root index (16 bits) : leaf index (20 bits). Entries are
  // plain words of zeroed mappings, read and written through atomic_ref.
  static constexpr unsigned kAddressBits = 48, kLeafBits = 20;
  static constexpr unsigned kRootBits = kAddressBits - 12 - kLeafBits;
  struct Leaf {
    std::uint64_t entry[std::size_t{1} << kLeafBits];
  };
  using Entry = std::atomic_ref<std::uint64_t>;
  static_assert(Entry::is_always_lock_free);
  using Root = std::atomic<Leaf *>[std::size_t{1} << kRootBits];

  static constexpr std::size_t roundUp(std::size_t v, std::size_t a) {
    return (v + a - 1) & ~(a - 1);
  }

  /// p's registry entry; with `create`, making its leaf (and the root) if
  /// needed. nullptr: p is not page-aligned or outside user space, or (not
  /// creating) no block was ever registered near it, or (creating) no
  /// memory for a leaf.
  std::uint64_t *entryFor(const void *p, bool create) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    if ((a & (os::kPageBytes - 1)) != 0 || (a >> kAddressBits) != 0)
      return nullptr;
    const std::uintptr_t page = a >> 12;
    Root *root = root_.load(std::memory_order_acquire);
    Leaf *leaf = root ? (*root)[page >> kLeafBits].load(std::memory_order_acquire) : nullptr;
    if (!leaf) {
      if (!create)
        return nullptr;
      leaf = const_cast<MmapHeap *>(this)->makeLeaf(page >> kLeafBits);
      if (!leaf)
        return nullptr;
    }
    return &leaf->entry[page & ((std::size_t{1} << kLeafBits) - 1)];
  }

  __attribute__((noinline)) Leaf *makeLeaf(std::uintptr_t index) {
    std::lock_guard<SpinLock> guard(grow_lock_);
    Root *root = root_.load(std::memory_order_acquire);
    if (!root) {
      root = static_cast<Root *>(os::map_sparse(sizeof(Root)));
      if (!root)
        return nullptr;
      root_.store(root, std::memory_order_release);
    }
    Leaf *leaf = (*root)[index].load(std::memory_order_acquire);
    if (!leaf) {
      leaf = static_cast<Leaf *>(os::map_sparse(sizeof(Leaf)));
      if (!leaf)
        return nullptr;
      (*root)[index].store(leaf, std::memory_order_release);
    }
    return leaf;
  }

  // Cache buckets: pages 1..64 one each; above, four per doubling up to
  // kCacheMaxBlock (1024 pages), so every block in a later bucket is
  // larger than every request that maps to an earlier one.
  static constexpr unsigned kExactPages = 64;
  static constexpr unsigned kBuckets = kExactPages + 4 * 4 + 1;
  static constexpr std::uint16_t kNone = 0xFFFF;
  static_assert(kCacheSlots < kNone);
  static_assert((kCacheMaxBlock >> 12) == 1024, "kBuckets covers up to 1024 pages");

  static unsigned bucketOf(std::size_t bytes) {
    const std::size_t pages = bytes >> 12;
    if (pages <= kExactPages)
      return static_cast<unsigned>(pages) - 1;
    const unsigned lg = 63u - static_cast<unsigned>(__builtin_clzll(pages));
    const unsigned sub = static_cast<unsigned>(pages >> (lg - 2)) & 3u;
    return kExactPages + (lg - 6) * 4 + sub;
  }

  /// A cached mapping of bytes..2*bytes (the best fit in the request's own
  /// bucket, else the newest of the next non-empty bucket),
  /// moved to the registry; nullptr if none.
  void *takeCachedLocked(std::size_t bytes, std::size_t *got) {
    if (cached_ == 0)
      return nullptr;
    unsigned b = bucketOf(bytes);
    // Best fit in the request's own bucket (an exact bucket's head is exact;
    // a logarithmic bucket's sizes differ by up to a quarter).
    std::uint16_t *link = nullptr;
    for (std::uint16_t *l = &heads_[b]; *l != kNone; l = &cache_[*l].next)
      if (cache_[*l].bytes >= bytes && (!link || cache_[*l].bytes < cache_[*link].bytes)) {
        link = l;
        if (cache_[*l].bytes == bytes)
          break;
      }
    if (!link) {
      link = nullptr;
      for (unsigned w = (b + 1) / 64, from = (b + 1) % 64; w < 2 && !link; ++w, from = 0) {
        const std::uint64_t bits = nonempty_[w] & (~std::uint64_t{0} << from);
        if (bits)
          link = &heads_[w * 64 + static_cast<unsigned>(__builtin_ctzll(bits))];
      }
      if (!link || cache_[*link].bytes / 2 > bytes)
        return nullptr;
      b = static_cast<unsigned>(link - heads_);
    }
    const std::uint16_t e = *link;
    if (!adopt(reinterpret_cast<void *>(cache_[e].key), cache_[e].bytes))
      return nullptr;
    *link = cache_[e].next;
    if (heads_[b] == kNone)
      nonempty_[b / 64] &= ~(std::uint64_t{1} << (b % 64));
    cache_[e].next = free_;
    free_ = e;
    cache_bytes_ -= cache_[e].bytes;
    --cached_;
    if (got)
      *got = cache_[e].bytes;
    return reinterpret_cast<void *>(cache_[e].key);
  }

  bool cacheLocked(void *p, std::size_t bytes) {
    if (bytes > kCacheMaxBlock || cached_ == kCacheSlots ||
        cache_bytes_ + bytes > kCacheBytes)
      return false;
    if (!ready_) { // the first use threads the records on the free list
      for (std::size_t i = 0; i < kCacheSlots; ++i)
        cache_[i].next = i + 1 < kCacheSlots ? static_cast<std::uint16_t>(i + 1) : kNone;
      for (std::uint16_t &h : heads_)
        h = kNone;
      free_ = 0;
      ready_ = true;
    }
    const std::uint16_t e = free_;
    free_ = cache_[e].next;
    const unsigned b = bucketOf(bytes);
    cache_[e] = Cached{reinterpret_cast<std::uintptr_t>(p), bytes, heads_[b]};
    heads_[b] = e;
    nonempty_[b / 64] |= std::uint64_t{1} << (b % 64);
    cache_bytes_ += bytes;
    ++cached_;
    return true;
  }

  struct Cached {
    std::uintptr_t key;
    std::size_t bytes;
    std::uint16_t next; // the next record in its bucket, or on the free list
  };

  SpinLock lock_; ///< the cache
  Cached cache_[kCacheSlots] = {};
  std::uint16_t heads_[kBuckets] = {};
  std::uint64_t nonempty_[2] = {};
  std::uint16_t free_ = 0;
  bool ready_ = false;
  std::size_t cached_ = 0, cache_bytes_ = 0;
  SpinLock grow_lock_; ///< a new leaf or root
  std::atomic<Root *> root_{nullptr};
  std::atomic<std::size_t> mapped_bytes_{0};
};

static_assert(SizedHeapLayer<MmapHeap> && OwningHeapLayer<MmapHeap>);

/// A thread's own cache of freed blocks in front of an MmapHeap (or any
/// heap with its release(p, bytes)), for
/// the owner only (no lock): up to kSlots mappings of up to kMaxBlock
/// bytes, kMaxBytes in all, oldest first (the oldest leave when room is
/// needed). Its blocks are out of the registry (the owner
/// unregistered them when they were freed), so a second free of one is
/// still reported. A thread that exits gives them to the shared cache
/// (drainTo).
class MmapThreadCache {
public:
  static constexpr unsigned kSlots = 16;
  static constexpr std::size_t kMaxBlock = std::size_t{256} << 10;
  /// (1 MiB before the fit region: a thread's cached blocks are resident
  /// and merge with nothing, cc1plus's trace 50.6% fragmentation, 38.2%
  /// at 256 KiB; with none at all, two threads' 64 KiB mix ran 1.4x
  /// slower, on the region's lock.)
  static constexpr std::size_t kMaxBytes = std::size_t{256} << 10;
  static_assert(kMaxBlock <= kMaxBytes, "put() makes room for any block it keeps");

  /// The smallest cached mapping of bytes..2*bytes (page multiples),
  /// removed from the cache, and its length in `got`; nullptr if none.
  void *take(std::size_t bytes, std::size_t &got) {
    unsigned best = kSlots;
    for (unsigned i = 0; i < n_; ++i)
      if (bytes_[i] >= bytes && bytes_[i] / 2 <= bytes &&
          (best == kSlots || bytes_[i] < bytes_[best]))
        best = i;
    if (best == kSlots)
      return nullptr;
    void *p = block_[best];
    got = bytes_[best];
    total_ -= got;
    --n_;
    for (unsigned i = best; i < n_; ++i) { // keep the age order
      block_[i] = block_[i + 1];
      bytes_[i] = bytes_[i + 1];
    }
    return p;
  }
  /// Keeps a mapping the owner unregistered, making room by giving the
  /// oldest entries to `heap`'s shared cache (so sizes the thread stopped
  /// asking for do not hold the cache); a mapping too large for it goes
  /// there directly.
  template <class Heap> void put(void *p, std::size_t bytes, Heap &heap) {
    if (bytes > kMaxBlock) {
      heap.release(p, bytes);
      return;
    }
    while (n_ == kSlots || total_ + bytes > kMaxBytes) {
      heap.release(block_[0], bytes_[0]);
      total_ -= bytes_[0];
      --n_;
      for (unsigned i = 0; i < n_; ++i) { // keep the age order
        block_[i] = block_[i + 1];
        bytes_[i] = bytes_[i + 1];
      }
    }
    block_[n_] = p;
    bytes_[n_] = bytes;
    ++n_;
    total_ += bytes;
  }
  /// Gives every mapping to `heap`'s shared cache (or back to the OS).
  template <class Heap> void drainTo(Heap &heap) {
    while (n_) {
      --n_;
      heap.release(block_[n_], bytes_[n_]);
    }
    total_ = 0;
  }
  unsigned size() const { return n_; }
  std::size_t bytes() const { return total_; }

private:
  void *block_[kSlots] = {};
  std::size_t bytes_[kSlots] = {};
  unsigned n_ = 0;
  std::size_t total_ = 0;
};

} // namespace defero
