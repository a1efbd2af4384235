// kbit_heap.h - KBitHeap: the Defero heap (Jula & Rauchwerger), a layer
// over a SpanArena.
//
// Free memory lives in two dimensions. First 'size': segregated size classes
// (size_classes.h). Then 'address': within a size class, free chunks are
// grouped into K-classes - chunks whose offsets in the arena window agree in
// their top K bits of a 32-bit window - and the non-empty K-classes are kept
// in an ordered red-black tree (Boost.Intrusive), each holding a list of its
// free chunks.
//
// Definition of K on a 64-bit machine. As in the paper, K counts bits of a
// 32-bit address: a K-class spans 2^(32-K) bytes of the window, so K=20
// gives 4 KiB classes (the page) and K=12 gives 1 MiB classes, whatever the
// window. The window itself may be larger than 4 GiB; it then holds
// window/2^(32-K) classes. A chunk's class key is (addr - window) >> (32-K).
// K ranges over 0..32 (0: one class per 4 GiB; 32: every byte its own).
//
// Predicates: First takes the lowest non-empty class (O(1): the tree's
// leftmost node; address-ordered, so memory is reused low-first); Best
// takes the hint's own class if it has a free chunk, else the nearest
// non-empty class by key (ties go low); Path follows the path's direction
// bits down the class tree from its root and takes the node where they run
// out or a child is missing, O(log C) for C non-empty classes, monotone in
// pathValue().
//
// Speed. For the usual K (a K-class no larger than a 64 KiB span page,
// K <= 24) a sparse table maps every class key to its node, so free files
// a chunk in O(1), Best finds the hint's class in O(1) and probes the four
// classes on each side before an O(log C) tree search. Outside that range
// (or if the table cannot be mapped) the tree alone serves, with the last
// node touched per size class cached. Chunk numbers come from a multiply,
// not a division (size_classes.h).
//
// Integrity (always on): every chunk has an allocated bit in its span's
// bitmap, so freeing a chunk twice, a pointer inside a chunk, or a pointer
// the heap never handed out is reported by os::fatal_pointer, not
// absorbed.
//
// Not thread-safe: wrap in LockedHeap. Memory is never returned to the OS;
// a span belongs to one size class for the life of the process.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include <boost/intrusive/set.hpp>

#include "defero/heaplayers/heap_layer.h"
#include "defero/heaplayers/top/span_arena.h"
#include "defero/kbit/predicate.h"
#include "defero/kbit/size_classes.h"
#include "defero/platform/os.h"

namespace defero {

namespace kbit {

/// A non-empty K-class of one size class: its key and its free chunks.
struct ClassNode : boost::intrusive::set_base_hook<
                       boost::intrusive::optimize_size<true>,
                       boost::intrusive::link_mode<boost::intrusive::normal_link>> {
  std::uintptr_t key = 0;
  void *head = nullptr; // singly linked through each chunk's first word
  std::uint32_t count = 0;
  std::uint8_t size_class = 0; // which size class's tree holds this node
};

struct ClassKeyOf {
  using type = std::uintptr_t;
  const type &operator()(const ClassNode &n) const { return n.key; }
};

using ClassTree =
    boost::intrusive::set<ClassNode, boost::intrusive::key_of_value<ClassKeyOf>,
                          boost::intrusive::constant_time_size<true>>;

/// Storage for ClassNodes outside the arena (metadata never mixes with user
/// chunks). Carves 64 KiB blocks from the OS; recycles through a free list.
class NodePool {
public:
  ClassNode *get() {
    if (free_) {
      ClassNode *n = free_;
      free_ = *reinterpret_cast<ClassNode **>(n);
      return new (n) ClassNode();
    }
    if (next_ == end_) {
      constexpr std::size_t kBlock = 65536;
      auto *b = static_cast<ClassNode *>(os::map(kBlock));
      if (!b)
        return nullptr;
      next_ = b;
      end_ = b + kBlock / sizeof(ClassNode);
    }
    return new (next_++) ClassNode();
  }
  void put(ClassNode *n) {
    n->~ClassNode();
    *reinterpret_cast<ClassNode **>(n) = free_;
    free_ = n;
  }

private:
  ClassNode *free_ = nullptr;
  ClassNode *next_ = nullptr;
  ClassNode *end_ = nullptr;
};

} // namespace kbit

template <class Super, unsigned DefaultK = 20> class KBitHeap : public Super {
  static_assert(DefaultK <= 32, "K counts bits of a 32-bit window: 0..32");

public:
  static constexpr unsigned kDefaultK = DefaultK;
  static constexpr unsigned kDirectMaxK = 24;

  KBitHeap() : id_(nextId()) {}
  KBitHeap(const KBitHeap &) = delete;
  KBitHeap &operator=(const KBitHeap &) = delete;

  /// Sets K. Only before the first allocation (returns false after, or for
  /// K > 32), since every free chunk is filed under its K-class.
  bool setK(unsigned k) {
    if (k > 32 || carved_)
      return false;
    k_ = k;
    return true;
  }
  unsigned k() const { return k_; }

  /// The K-class key of an address in the window (meaningful if inWindow).
  std::uintptr_t classKey(const void *p) const {
    return (reinterpret_cast<std::uintptr_t>(p) - Super::base()) >> (32 - k_);
  }
  bool inWindow(const void *p) const { return Super::owns(p); }

  void *malloc(std::size_t sz) { return allocate(sz, Predicate::First, nullptr, 0, 0); }
  void *mallocNear(std::size_t sz, const void *hint) {
    return allocate(sz, Predicate::Best, hint, 0, 0);
  }
  void *mallocPath(std::size_t sz, std::uint64_t bits, unsigned depth) {
    return allocate(sz, Predicate::Path, nullptr, bits, depth);
  }

  /// Allocates from size class `cls` with predicate `pred`. `hint` is used
  /// by Best, (bits, depth) by Path. nullptr when the arena is exhausted.
  void *allocateClass(unsigned cls, Predicate pred, const void *hint,
                      std::uint64_t bits, unsigned depth) {
    kbit::ClassTree &tree = trees_[cls];
    if (tree.empty() && !refill(cls))
      return nullptr;
    kbit::ClassNode *node = nullptr;
    switch (pred) {
    case Predicate::Best:
      node = (hint && inWindow(hint)) ? nearest(cls, classKey(hint))
                                      : &*tree.begin();
      break;
    case Predicate::Path:
      node = followPath(tree, bits, depth);
      break;
    case Predicate::First:
    case Predicate::Auto:
      node = &*tree.begin();
      break;
    }
    return take(cls, node);
  }

  void *allocate(std::size_t sz, Predicate pred, const void *hint,
                 std::uint64_t bits, unsigned depth) {
    if (sz > kbit::kMaxSmallBytes)
      return nullptr;
    return allocateClass(kbit::classOf(sz), pred, hint, bits, depth);
  }

  void free(void *p) { release(p, "free"); }

  /// Returns p to its K-class and its usable size. `call` names the API
  /// entry in the one-line report if p is not a live chunk of this heap.
  std::size_t release(void *p, const char *call) {
    if (!p)
      return 0;
    Chunk c;
    if (!locate(p, c))
      os::fatal_pointer(call, p, "pointer not allocated by this heap");
    if (c.index >= chunksPerSpan(c.cls))
      os::fatal_pointer(call, p, "pointer not allocated by this heap");
    if (c.offset_in_chunk != 0)
      os::fatal_pointer(call, p, "pointer is inside a block, not its start");
    const std::size_t i = c.index;
    std::uint64_t &word = c.bits[i / 64];
    const std::uint64_t mask = std::uint64_t{1} << (i % 64);
    if (!(word & mask))
      os::fatal_pointer(call, p, "double free (block is already free)");
    word &= ~mask;
    ++frees_;
    file(c.cls, p);
    return c.bytes;
  }

  /// Usable bytes of a live chunk; 0 for anything else (a free chunk, a
  /// pointer inside a chunk, a pointer that is not ours).
  std::size_t getSize(const void *p) { return isLive(p) ? sizeOf(p) : 0; }

  /// Chunk bytes of the size class whose span holds p (0 if not ours),
  /// whatever the chunk's state.
  std::size_t sizeOf(const void *p) {
    Chunk c;
    return locate(p, c) ? c.bytes : 0;
  }

  static std::size_t chunksPerSpan(unsigned cls) { return kChunksPerSpan[cls]; }

  /// This heap's id in span metadata, and the id
  /// of the heap that carved the span holding p (0 if none): with these a
  /// caller holding several heaps finds a pointer's owner in one load.
  std::uint8_t id() const { return id_; }
  std::uint8_t ownerId(const void *p) const {
    if (!Super::owns(p))
      return 0;
    const SpanPage pg = loadPage(const_cast<KBitHeap &>(*this).page(p));
    return pg.size_class_plus1 ? pg.heap_id : 0;
  }

  /// True for any address inside a chunk span carved by this heap.
  bool owns(const void *p) const {
    if (!Super::owns(p))
      return false;
    auto &self = const_cast<KBitHeap &>(*this);
    const SpanPage pg = loadPage(self.page(p));
    return pg.size_class_plus1 != 0 && pg.heap_id == id_;
  }

  /// Bytes from p to the end of the chunk holding it (0 if not ours): how
  /// much may be read at p without leaving the chunk.
  std::size_t bytesToChunkEnd(const void *p) {
    Chunk c;
    if (!locate(p, c))
      return 0;
    return c.bytes - c.offset_in_chunk;
  }

  /// Bytes from p to the end of its span, for a span of any heap sharing
  /// this arena (0 outside carved spans): how much may be read at p without
  /// touching unmapped memory. Reads only span metadata, which never changes
  /// once carved, so no lock is needed; no division.
  std::size_t readableBytes(const void *p) {
    if (!Super::owns(p))
      return 0;
    const std::size_t idx = Super::pageIndex(p);
    const SpanPage pg = loadPage(Super::pageAt(idx));
    if (pg.size_class_plus1 == 0)
      return 0;
    const std::size_t first = idx - pg.pages_from_start;
    const std::size_t span = kbit::spanBytesFor(
        kbit::kClassBytes[pg.size_class_plus1 - 1u], Super::kSpanBytes);
    return reinterpret_cast<std::uintptr_t>(Super::pageStart(first)) + span -
           reinterpret_cast<std::uintptr_t>(p);
  }

  /// True if p is the start of a chunk that is currently allocated.
  bool isLive(const void *p) {
    Chunk c;
    if (!locate(p, c) || c.offset_in_chunk != 0 || c.index >= chunksPerSpan(c.cls))
      return false;
    const std::size_t i = c.index;
    return (c.bits[i / 64] >> (i % 64)) & 1;
  }

  /// Size class of a chunk of this heap (kNumClasses if not ours).
  unsigned sizeClassOf(const void *p) {
    Chunk c;
    return locate(p, c) ? c.cls : kbit::kNumClasses;
  }

  // --- introspection, for tests and statistics --------------------------

  std::size_t freeChunks(unsigned cls) const {
    std::size_t n = 0;
    for (const kbit::ClassNode &node : trees_[cls])
      n += node.count;
    return n;
  }
  std::size_t nonEmptyClasses(unsigned cls) const { return trees_[cls].size(); }
  std::size_t freeBytes() const { return free_bytes_; }
  /// Chunks handed out / taken back since construction.
  std::uint64_t allocCount() const { return allocs_; }
  std::uint64_t freeCount() const { return frees_; }

  /// Visits every free chunk: f(chunk, size_class, class_key_filed_under).
  template <class F> void forEachFreeChunk(F &&f) const {
    for (unsigned cls = 0; cls < kbit::kNumClasses; ++cls)
      for (const kbit::ClassNode &node : trees_[cls])
        for (void *c = node.head; c; c = next(c))
          f(c, cls, node.key);
  }

  /// The smallest / largest non-empty class key of a size class (tests).
  bool keyRange(unsigned cls, std::uintptr_t &lo, std::uintptr_t &hi) const {
    if (trees_[cls].empty())
      return false;
    lo = trees_[cls].begin()->key;
    hi = trees_[cls].rbegin()->key;
    return true;
  }

private:
  static constexpr auto kChunksPerSpan = [] {
    std::array<std::uint32_t, kbit::kNumClasses> n{};
    for (unsigned c = 0; c < kbit::kNumClasses; ++c)
      n[c] = static_cast<std::uint32_t>(
          kbit::spanBytesFor(kbit::kClassBytes[c], Super::kSpanBytes) /
          kbit::kClassBytes[c]);
    return n;
  }();

  struct Chunk {
    unsigned cls = 0;
    std::size_t bytes = 1;
    std::size_t index = 0;           // chunk number in its span
    std::size_t offset_in_chunk = 0; // 0 for a chunk start
    std::uint64_t *bits = nullptr;
  };

  static void *&nextRef(void *c) { return *static_cast<void **>(c); }
  static void *next(void *c) { return *static_cast<void **>(c); }

  /// Fills c for p if p lies in a span of this heap.
  bool locate(const void *p, Chunk &c) {
    if (!Super::owns(p))
      return false;
    const std::size_t idx = Super::pageIndex(p);
    const SpanPage pg = loadPage(Super::pageAt(idx));
    if (pg.size_class_plus1 == 0 || pg.heap_id != id_)
      return false;
    fill(p, idx, pg, c);
    return true;
  }

  /// Fills c for a p known to be in one of this heap's spans.
  void locateOwned(const void *p, Chunk &c) {
    const std::size_t idx = Super::pageIndex(p);
    fill(p, idx, loadPage(Super::pageAt(idx)), c);
  }

  void fill(const void *p, std::size_t idx, const SpanPage &pg, Chunk &c) {
    const std::size_t first = idx - pg.pages_from_start;
    c.cls = pg.size_class_plus1 - 1u;
    c.bytes = kbit::kClassBytes[c.cls];
    const std::size_t off =
        reinterpret_cast<std::uintptr_t>(p) -
        reinterpret_cast<std::uintptr_t>(Super::pageStart(first));
    c.index = kbit::divideByClass(off, c.cls);
    c.offset_in_chunk = off - c.index * c.bytes;
    c.bits = Super::bits(first);
  }

  static std::uint8_t nextId() {
    static std::atomic<unsigned> ids{0};
    return static_cast<std::uint8_t>(1 + ids.fetch_add(1) % 255);
  }

  /// Carves a fresh span for size class cls and files all its chunks.
  bool refill(unsigned cls) {
    const std::size_t cls_bytes = kbit::kClassBytes[cls];
    const std::size_t span =
        kbit::spanBytesFor(kbit::kClassBytes[cls], Super::kSpanBytes);
    auto *s = static_cast<char *>(Super::malloc(span));
    if (!s)
      return false;
    if (!carved_ && k_ <= kDirectMaxK &&
        (std::uint64_t{1} << (32 - k_)) <= Super::kSpanBytes) {
      direct_entries_ = Super::windowBytes() >> (32 - k_);
      direct_ = static_cast<kbit::ClassNode **>(
          os::map_sparse(direct_entries_ * sizeof(void *)));
    }
    carved_ = true;
    const std::size_t first = Super::pageIndex(s);
    for (std::size_t i = 0; i < span / Super::kSpanBytes; ++i)
      storePage(Super::pageAt(first + i),
                SpanPage{static_cast<std::uint8_t>(cls + 1), id_,
                         static_cast<std::uint16_t>(i)});
    // File from the top down so each class list pops in address order.
    const std::size_t n = span / cls_bytes;
    for (std::size_t i = n; i-- > 0;)
      file(cls, s + i * cls_bytes);
    return true;
  }

  /// Puts a free chunk on its K-class list (creating the class node).
  void file(unsigned cls, void *p) {
    const std::uintptr_t key = classKey(p);
    kbit::ClassNode *node = direct_ ? direct_[key] : cache_[cls];
    if (!node || node->key != key) {
      kbit::ClassTree &tree = trees_[cls];
      typename kbit::ClassTree::insert_commit_data data;
      auto [it, fresh] = tree.insert_unique_check(key, data);
      if (fresh) {
        node = pool_.get();
        if (!node) // metadata exhausted: the chunk is lost, never corrupted
          return;
        node->key = key;
        node->size_class = static_cast<std::uint8_t>(cls);
        tree.insert_unique_commit(*node, data);
        if (direct_)
          direct_[key] = node;
      } else {
        node = &*it;
      }
      cache_[cls] = node;
    }
    nextRef(p) = node->head;
    node->head = p;
    ++node->count;
    free_bytes_ += kbit::kClassBytes[cls];
  }

  /// Pops a chunk from node, marks it allocated, drops the node if empty.
  void *take(unsigned cls, kbit::ClassNode *node) {
    void *p = node->head;
    node->head = next(p);
    if (--node->count == 0) {
      trees_[cls].erase(trees_[cls].iterator_to(*node));
      if (cache_[cls] == node)
        cache_[cls] = nullptr;
      if (direct_)
        direct_[node->key] = nullptr;
      pool_.put(node);
    }
    ++allocs_;
    free_bytes_ -= kbit::kClassBytes[cls];
    Chunk c;
    locateOwned(p, c); // p came from our own class list
    const std::size_t i = c.index;
    c.bits[i / 64] |= std::uint64_t{1} << (i % 64);
    return p;
  }

  /// The class node with `key`, else the nearest by key (ties go low).
  kbit::ClassNode *nearest(unsigned cls, std::uintptr_t key) {
    // direct_ is keyed by class only: its node may hold another size class.
    kbit::ClassNode *cached = direct_ ? direct_[key] : cache_[cls];
    if (cached && cached->key == key && cached->size_class == cls)
      return cached;
    if (direct_) {
      // The nearest class is usually a neighbour: probe up to kProbe
      // classes each way, low side first (ties go low). A K-class here lies
      // in one span page, so an entry of another size class, like an empty
      // entry, means "no chunk of cls there": the first hit is the nearest.
      for (std::uintptr_t d = 1; d <= kProbe; ++d) {
        if (key >= d) {
          kbit::ClassNode *n = direct_[key - d];
          if (n && n->size_class == cls)
            return n;
        }
        if (key + d < direct_entries_) {
          kbit::ClassNode *n = direct_[key + d];
          if (n && n->size_class == cls)
            return n;
        }
      }
    }
    kbit::ClassTree &tree = trees_[cls];
    auto hi = tree.lower_bound(key);
    if (hi != tree.end() && hi->key == key)
      return &*hi;
    if (hi == tree.begin())
      return &*hi;
    auto lo = std::prev(hi);
    if (hi == tree.end() || key - lo->key <= hi->key - key)
      return &*lo;
    return &*hi;
  }

  /// Walks the class tree from its root: bit 1 goes right, 0 goes left,
  /// first step in the most significant of the `depth` bits.
  static kbit::ClassNode *followPath(kbit::ClassTree &tree, std::uint64_t bits,
                                     unsigned depth) {
    using VT = kbit::ClassTree::value_traits;
    using NT = kbit::ClassTree::node_traits;
    auto n = VT::to_node_ptr(*tree.root());
    if (depth > 64)
      depth = 64; // only the first 64 steps are carried
    for (unsigned i = 0; i < depth; ++i) {
      auto child = ((bits >> (depth - 1 - i)) & 1) ? NT::get_right(n)
                                                   : NT::get_left(n);
      if (!child)
        break;
      n = child;
    }
    return VT::to_value_ptr(n);
  }

  kbit::ClassTree trees_[kbit::kNumClasses];
  kbit::ClassNode *cache_[kbit::kNumClasses] = {};
  // When a K-class fits in one span page (2^(32-K) <= kSpanBytes) and
  // K <= kDirectMaxK, direct_[key] is the node of class `key` (or null): the
  // class then holds chunks of one size class of one heap, so free finds
  // its node in O(1). The table
  // is reserved sparse (window / class bytes pointers; 2 GiB of address
  // space at K=24 on a 64 GiB window) and costs real memory only where
  // chunks live: one 4 KiB table page per 512 classes.
  kbit::ClassNode **direct_ = nullptr;
  std::uintptr_t direct_entries_ = 0;
  static constexpr std::uintptr_t kProbe = 4;
  std::uint64_t allocs_ = 0, frees_ = 0;
  kbit::NodePool pool_;
  std::size_t free_bytes_ = 0;
  unsigned k_ = DefaultK;
  const std::uint8_t id_; // set at construction: read without the lock
  bool carved_ = false;
};

static_assert(SizedHeapLayer<KBitHeap<SpanArena<>>> &&
              OwningHeapLayer<KBitHeap<SpanArena<>>>);

} // namespace defero
