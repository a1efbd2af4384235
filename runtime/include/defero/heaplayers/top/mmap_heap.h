// mmap_heap.h - MmapHeap: every object is its own anonymous mapping, and a
// registry remembers each one.
//
// Used for large objects. The registry makes free exact: a pointer this heap
// did not map is reported, never unmapped; getSize is the mapping's length.
//
// Freed mappings of up to kCacheMaxBlock bytes are kept (at most
// kCacheSlots of them, kCacheBytes in all) and handed out again to a request
// they fit within a factor of two, saving the mmap, the page faults and the
// munmap of programs that churn mid-sized buffers. The cache files them in
// size buckets (one per page count up to 256 KiB, four per doubling above),
// LIFO, with a bitmap of the non-empty buckets, so a take or a put costs a
// few instructions however many are cached; its records live out of band,
// so a write to a freed block cannot corrupt it. A cached mapping is not in
// the registry, so freeing it again is still reported.
//
// Guarantees: page alignment (aligned malloc goes up to any power of two);
// fresh mappings are zero-filled (mallocAligned says whether a block is
// fresh); thread-safe (one spin lock); no headers in front of the object.
// Cost: a bucket lookup, else one mmap, per malloc; a hash probe per free.
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
    std::lock_guard<SpinLock> guard(lock_);
    if (!insertLocked(p, bytes)) {
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
  /// touched), for callers that count them: one look-up, one lock.
  std::size_t freeSized(void *p) {
    std::size_t bytes;
    {
      std::lock_guard<SpinLock> guard(lock_);
      bytes = eraseLocked(p);
      if (bytes == 0)
        return 0;
      if (cacheLocked(p, bytes))
        return bytes;
      mapped_bytes_ -= bytes;
    }
    os::unmap(p, bytes);
    return bytes;
  }

  void free(void *p) {
    if (p && !tryFree(p))
      os::fatal_pointer("free", p, "pointer not allocated by this heap");
  }

  /// Grows or shrinks an object in place or by moving its pages (no copy).
  /// Returns nullptr (object unchanged) on failure or if p is not ours.
  void *remap(void *p, std::size_t sz) {
    const std::size_t bytes = roundUp(sz ? sz : 1, os::kPageBytes);
    if (bytes < sz)
      return nullptr;
    std::lock_guard<SpinLock> guard(lock_);
    if (!findLocked(p))
      return nullptr;
    // Room for the new entry first, so the block never leaves the registry.
    if ((count_ + tombs_ + 2) * 2 > cap_ && !growLocked())
      return nullptr;
    Slot *s = findLocked(p);
    void *q = os::remap(p, s->bytes, bytes);
    if (!q)
      return nullptr;
    mapped_bytes_ = mapped_bytes_ - s->bytes + bytes;
    eraseLocked(p);
    insertLocked(q, bytes); // cannot fail: room was made above
    return q;
  }

  std::size_t getSize(const void *p) {
    std::lock_guard<SpinLock> guard(lock_);
    Slot *s = findLocked(p);
    return s ? s->bytes : 0;
  }

  bool owns(const void *p) const {
    std::lock_guard<SpinLock> guard(lock_);
    return const_cast<MmapHeap *>(this)->findLocked(p) != nullptr;
  }

  /// Bytes mapped now (cached mappings included); read without the lock.
  std::size_t mappedBytes() const {
    return mapped_bytes_.load(std::memory_order_relaxed);
  }
  void lockHeap() { lock_.lock(); }
  void unlockHeap() { lock_.unlock(); }

private:
  struct Slot {
    std::uintptr_t key; // 0 empty, 1 tombstone
    std::size_t bytes;
  };
  static constexpr std::uintptr_t kEmpty = 0, kTomb = 1;

  static constexpr std::size_t roundUp(std::size_t v, std::size_t a) {
    return (v + a - 1) & ~(a - 1);
  }
  /// High bits of a Fibonacci product: mappings aligned to large powers of
  /// two (whose low bits are all zero) still spread over the table.
  static std::size_t hash(std::uintptr_t k) {
    return static_cast<std::size_t>(((k >> 12) * 0x9E3779B97F4A7C15ull) >> 32);
  }

  Slot *findLocked(const void *p) {
    if (!table_)
      return nullptr;
    const auto k = reinterpret_cast<std::uintptr_t>(p);
    for (std::size_t i = hash(k) & (cap_ - 1), n = 0; n < cap_;
         i = (i + 1) & (cap_ - 1), ++n) {
      if (table_[i].key == k)
        return &table_[i];
      if (table_[i].key == kEmpty)
        return nullptr;
    }
    return nullptr;
  }

  bool insertLocked(void *p, std::size_t bytes) {
    if ((count_ + tombs_ + 1) * 2 > cap_ && !growLocked())
      return false;
    const auto k = reinterpret_cast<std::uintptr_t>(p);
    std::size_t i = hash(k) & (cap_ - 1);
    while (table_[i].key > kTomb)
      i = (i + 1) & (cap_ - 1);
    if (table_[i].key == kTomb)
      --tombs_;
    table_[i] = Slot{k, bytes};
    ++count_;
    return true;
  }

  std::size_t eraseLocked(void *p) {
    Slot *s = findLocked(p);
    if (!s)
      return 0;
    const std::size_t bytes = s->bytes;
    s->key = kTomb;
    --count_;
    ++tombs_;
    return bytes;
  }

  bool growLocked() {
    std::size_t ncap = cap_ ? cap_ * 2 : 256;
    if ((count_ + 1) * 4 < cap_) // mostly tombstones: rehash at same size
      ncap = cap_;
    auto *nt = static_cast<Slot *>(os::map(ncap * sizeof(Slot)));
    if (!nt)
      return false;
    for (std::size_t i = 0; i < cap_; ++i) {
      if (table_[i].key <= kTomb)
        continue;
      std::size_t j = hash(table_[i].key) & (ncap - 1);
      while (nt[j].key != kEmpty)
        j = (j + 1) & (ncap - 1);
      nt[j] = table_[i];
    }
    if (table_)
      os::unmap(table_, cap_ * sizeof(Slot));
    table_ = nt;
    cap_ = ncap;
    tombs_ = 0;
    return true;
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
    if (!insertLocked(reinterpret_cast<void *>(cache_[e].key), cache_[e].bytes))
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

  mutable SpinLock lock_;
  Cached cache_[kCacheSlots] = {};
  std::uint16_t heads_[kBuckets] = {};
  std::uint64_t nonempty_[2] = {};
  std::uint16_t free_ = 0;
  bool ready_ = false;
  std::size_t cached_ = 0, cache_bytes_ = 0;
  Slot *table_ = nullptr;
  std::size_t cap_ = 0, count_ = 0, tombs_ = 0;
  std::atomic<std::size_t> mapped_bytes_{0};
};

static_assert(SizedHeapLayer<MmapHeap> && OwningHeapLayer<MmapHeap>);

} // namespace defero
