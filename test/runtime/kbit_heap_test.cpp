// kbit_heap_test.cpp - invariants of the K-Bit heap (KBitHeap over a
// SharedArena<SpanArena>): the two-dimensional filing of free chunks, the
// three predicates (First, Best, Path), K, exhaustion and the integrity
// checks of release().
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "defero/heaplayers/top/shared_arena.h"
#include "defero/heaplayers/top/span_arena.h"
#include "defero/kbit/kbit_heap.h"
#include "defero/kbit/predicate.h"
#include "defero/kbit/size_classes.h"
#include "test_util.h"

using namespace defero;

namespace {

constexpr std::size_t kWindow = std::size_t{1} << 32;

template <class Tag, unsigned K = 20, std::size_t Window = kWindow,
          std::size_t Span = 65536>
using Heap = KBitHeap<SharedArena<SpanArena<Window, Span>, Tag>, K>;

std::uintptr_t addr(const void *p) { return reinterpret_cast<std::uintptr_t>(p); }

/// Free chunks as the heap reports them: size class -> class key -> count.
using FreeMap = std::map<unsigned, std::map<std::uintptr_t, std::size_t>>;

/// Walks every free chunk, checks it is filed where it belongs, and returns
/// the per-class key counts.
template <class H> FreeMap checkedFreeMap(H &h) {
  FreeMap m;
  std::size_t bytes = 0;
  std::set<void *> seen;
  h.forEachFreeChunk([&](void *c, unsigned cls, std::uintptr_t key) {
    EXPECT_EQ(key, h.classKey(c)) << "chunk " << c << " filed under a foreign K-class";
    EXPECT_EQ(cls, h.sizeClassOf(c)) << "chunk " << c << " filed under a foreign size class";
    EXPECT_TRUE(h.owns(c));
    EXPECT_FALSE(h.isLive(c)) << "a live chunk is on a free list";
    EXPECT_EQ(h.bytesToChunkEnd(c), kbit::kClassBytes[cls]) << "not a chunk start";
    EXPECT_EQ(addr(c) % kMinAlignment, 0u);
    EXPECT_TRUE(seen.insert(c).second) << "chunk " << c << " filed twice";
    ++m[cls][key];
    bytes += kbit::kClassBytes[cls];
  });
  EXPECT_EQ(bytes, h.freeBytes());
  for (unsigned cls = 0; cls < kbit::kNumClasses; ++cls) {
    std::size_t n = 0;
    for (auto [k, c] : m[cls])
      n += c;
    EXPECT_EQ(n, h.freeChunks(cls)) << "size class " << cls;
    EXPECT_EQ(m[cls].size(), h.nonEmptyClasses(cls)) << "size class " << cls;
    std::uintptr_t lo = 0, hi = 0;
    const bool any = h.keyRange(cls, lo, hi);
    EXPECT_EQ(any, !m[cls].empty());
    if (any) {
      EXPECT_EQ(lo, m[cls].begin()->first);
      EXPECT_EQ(hi, m[cls].rbegin()->first);
    }
  }
  for (auto it = m.begin(); it != m.end();)
    it = it->second.empty() ? m.erase(it) : std::next(it);
  return m;
}

/// The nearest key to `k` in `keys` (non-empty), ties to the lower key.
std::uintptr_t nearestKey(const std::map<std::uintptr_t, std::size_t> &keys,
                          std::uintptr_t k) {
  auto hi = keys.lower_bound(k);
  if (hi != keys.end() && hi->first == k)
    return k;
  if (hi == keys.begin())
    return hi->first;
  auto lo = std::prev(hi);
  if (hi == keys.end() || k - lo->first <= hi->first - k)
    return lo->first;
  return hi->first;
}

/// Allocates `n` chunks of `size` with First.
template <class H> std::vector<void *> take(H &h, std::size_t size, std::size_t n) {
  std::vector<void *> v;
  for (std::size_t i = 0; i < n; ++i) {
    void *p = h.malloc(size);
    EXPECT_NE(p, nullptr);
    if (!p)
      break;
    v.push_back(p);
  }
  return v;
}

/// Frees a random fraction of v (removing them from v).
template <class H>
void freeSome(H &h, std::vector<void *> &v, double fraction, std::mt19937_64 &rng) {
  std::shuffle(v.begin(), v.end(), rng);
  const std::size_t n = static_cast<std::size_t>(v.size() * fraction);
  for (std::size_t i = 0; i < n; ++i) {
    h.free(v.back());
    v.pop_back();
  }
}

} // namespace

// --- filing: every free chunk under the class of its top K bits -------------

class KBitFiling : public ::testing::TestWithParam<unsigned> {};

TEST_P(KBitFiling, EveryFreeChunkIsFiledUnderItsTopKBits) {
  struct Tag {};
  auto h = std::make_unique<Heap<Tag>>();
  ASSERT_TRUE(h->setK(GetParam()));
  std::mt19937_64 rng(GetParam() * 7919 + 1);
  std::map<std::uintptr_t, std::size_t> live; // addr -> usable bytes
  std::vector<void *> order;
  const std::size_t sizes[] = {8, 16, 48, 100, 256, 1000, 3000, 9000, 30000};
  for (int op = 0; op < 12000; ++op) {
    const unsigned r = rng() % 10;
    if (r < 6 || live.empty()) {
      const std::size_t sz = sizes[rng() % std::size(sizes)];
      void *p;
      if (r == 0 && !order.empty()) {
        // A hint of the same size class (the container case).
        void *hint = order[rng() % order.size()];
        p = h->mallocNear(h->getSize(hint), hint);
      } else if (r == 1) {
        p = h->mallocPath(sz, rng(), static_cast<unsigned>(rng() % 65));
      } else {
        p = h->malloc(sz);
      }
      ASSERT_NE(p, nullptr);
      ASSERT_TRUE(h->isLive(p));
      const std::size_t bytes = h->getSize(p);
      auto next = live.lower_bound(addr(p));
      ASSERT_TRUE(next == live.end() || next->first >= addr(p) + bytes) << "overlap";
      ASSERT_TRUE(next == live.begin() || std::prev(next)->first + std::prev(next)->second <= addr(p))
          << "overlap";
      live[addr(p)] = bytes;
      order.push_back(p);
    } else {
      const std::size_t i = rng() % order.size();
      void *p = order[i];
      order[i] = order.back();
      order.pop_back();
      live.erase(addr(p));
      h->free(p);
      ASSERT_FALSE(h->isLive(p));
    }
    if (op % 3000 == 2999) {
      const FreeMap m = checkedFreeMap(*h);
      for (auto &[cls, keys] : m)
        for (auto [key, count] : keys)
          ASSERT_LE(count, (std::size_t{1} << (32 - GetParam())) / kbit::kClassBytes[cls] + 1)
              << "more chunks in a K-class than start in it";
      if (::testing::Test::HasFailure())
        return;
    }
  }
  EXPECT_EQ(h->k(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(K, KBitFiling, ::testing::Values(0u, 4u, 12u, 16u, 20u, 24u, 26u, 32u),
                         [](const auto &info) { return "K" + std::to_string(info.param); });

// --- K: class size, setK -------------------------------------------------------

TEST(KBitClasses, K20ClassIsFourKiB) {
  struct Tag {};
  auto h = std::make_unique<Heap<Tag, 20>>();
  EXPECT_EQ(h->k(), 20u);
  auto v = take(*h, 64, 1024); // one 64 KiB span: 16 K-classes of 64 chunks
  const std::uintptr_t base = h->base();
  std::map<std::uintptr_t, int> per_class;
  for (void *p : v) {
    EXPECT_EQ(h->classKey(p), (addr(p) - base) / 4096);
    ++per_class[h->classKey(p)];
  }
  for (auto [k, n] : per_class)
    EXPECT_EQ(n, 64) << "a 4 KiB class holds 64 chunks of 64 bytes";
  // Two chunks 4096 bytes apart are in adjacent classes; 4032 apart, inside
  // one 4 KiB class, in the same one.
  std::set<std::uintptr_t> chunks;
  for (void *p : v)
    chunks.insert(addr(p));
  int adjacent = 0;
  for (std::uintptr_t a : chunks) {
    if (chunks.count(a + 4096)) {
      EXPECT_EQ(h->classKey(reinterpret_cast<void *>(a + 4096)),
                h->classKey(reinterpret_cast<void *>(a)) + 1);
      ++adjacent;
    }
    if ((a - base) % 4096 == 0 && chunks.count(a + 4032)) {
      EXPECT_EQ(h->classKey(reinterpret_cast<void *>(a + 4032)),
                h->classKey(reinterpret_cast<void *>(a)));
    }
  }
  EXPECT_EQ(adjacent, 1024 - 64);
}

TEST(KBitClasses, ClassKeyIsTheOffsetsTopKBitsOfA32BitWindow) {
  struct Tag {};
  for (unsigned k : {0u, 1u, 12u, 20u, 31u, 32u}) {
    auto h = std::make_unique<Heap<Tag>>();
    ASSERT_TRUE(h->setK(k));
    void *p = h->malloc(16);
    ASSERT_NE(p, nullptr);
    const std::uintptr_t base = h->base();
    for (std::uintptr_t off : {std::uintptr_t{0}, std::uintptr_t{4095}, std::uintptr_t{4096},
                               std::uintptr_t{1} << 20, (std::uintptr_t{1} << 32) - 1}) {
      EXPECT_EQ(h->classKey(reinterpret_cast<void *>(base + off)), off >> (32 - k))
          << "K=" << k << " offset " << off;
    }
  }
}

TEST(KBitClasses, SetKOnlyBeforeTheFirstAllocationAndAtMost32) {
  struct Tag {};
  auto h = std::make_unique<Heap<Tag, 20>>();
  EXPECT_FALSE(h->setK(33));
  EXPECT_FALSE(h->setK(1000));
  EXPECT_EQ(h->k(), 20u);
  EXPECT_TRUE(h->setK(32));
  EXPECT_TRUE(h->setK(0));
  EXPECT_TRUE(h->setK(12));
  EXPECT_EQ(h->k(), 12u);
  void *p = h->malloc(100);
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(h->setK(20)) << "chunks are already filed under K=12";
  EXPECT_FALSE(h->setK(12));
  EXPECT_EQ(h->k(), 12u);
  h->free(p);
  EXPECT_FALSE(h->setK(20)) << "even with nothing live";
  EXPECT_EQ(h->classKey(p), (addr(p) - h->base()) >> 20);
}

// --- First ------------------------------------------------------------------------

TEST(KBitFirst, TakesTheLowestNonEmptyClass) {
  struct Tag {};
  for (unsigned k : {12u, 20u, 28u}) {
    auto h = std::make_unique<Heap<Tag>>();
    ASSERT_TRUE(h->setK(k));
    std::mt19937_64 rng(k);
    auto v = take(*h, 200, 6000); // class 208
    freeSome(*h, v, 0.5, rng);
    const unsigned cls = kbit::classOf(200);
    for (int i = 0; i < 2000; ++i) {
      std::uintptr_t lo, hi;
      ASSERT_TRUE(h->keyRange(cls, lo, hi));
      void *p = h->malloc(193 + rng() % 16); // class 208, like 200
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(h->classKey(p), lo) << "K=" << k;
      if (rng() % 3 == 0)
        h->free(p);
    }
  }
}

// --- Best ---------------------------------------------------------------------------

namespace {
// Runs many Best allocations against the independent model. cross_class:
// whether hints may point into spans of other size classes.
template <class H> void bestAgainstModel(H &h, std::mt19937_64 &rng, bool cross_class) {
  const std::size_t sizes[] = {64, 256, 1024};
  std::vector<void *> live[3];
  for (int i = 0; i < 3; ++i) {
    live[i] = take(h, sizes[i], 2500);
    freeSome(h, live[i], 0.6, rng);
  }
  std::size_t same = 0, nearest = 0, checked = 0;
  for (int it = 0; it < 1500; ++it) {
    const int s = static_cast<int>(rng() % 3);
    const std::size_t sz = sizes[s];
    const unsigned cls = kbit::classOf(sz);
    FreeMap m;
    if (it % 250 == 0) {
      m = checkedFreeMap(h);
      if (::testing::Test::HasFailure())
        return;
    } else {
      h.forEachFreeChunk([&](void *, unsigned c, std::uintptr_t key) { ++m[c][key]; });
    }
    // Pick a hint.
    const void *hint = nullptr;
    const unsigned pick = rng() % 10;
    if (pick < 5 && !live[s].empty()) {
      hint = live[s][rng() % live[s].size()];
    } else if (pick < 7 && m.count(cls)) {
      // An address inside a free chunk of the same size class.
      std::vector<void *> f;
      h.forEachFreeChunk([&](void *c, unsigned c_cls, std::uintptr_t) {
        if (c_cls == cls)
          f.push_back(c);
      });
      hint = static_cast<char *>(f[rng() % f.size()]) + rng() % sz;
    } else if (pick < 9 && cross_class) {
      hint = reinterpret_cast<void *>(h.base() + rng() % h.usedBytes());
    } else if (pick < 9) {
      const int o = static_cast<int>(rng() % 3);
      if (!live[o].empty())
        hint = live[o][rng() % live[o].size()];
      if (hint && h.sizeClassOf(hint) != cls)
        hint = nullptr; // only same-size-class spans here
    } else {
      static int on_stack;
      hint = &on_stack; // outside the window: Best acts as First
    }
    const bool in_window = hint && h.inWindow(hint);
    std::uintptr_t expect = 0;
    const bool known = m.count(cls) != 0;
    if (known)
      expect = in_window ? nearestKey(m.at(cls), h.classKey(hint)) : m.at(cls).begin()->first;
    void *p = h.mallocNear(sz, hint);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(h.sizeClassOf(p), cls);
    if (known) {
      ++checked;
      EXPECT_EQ(h.classKey(p), expect)
          << "hint " << hint << " (class " << (in_window ? h.classKey(hint) : 0) << ")";
      if (in_window && expect == h.classKey(hint))
        ++same;
      else if (in_window)
        ++nearest;
    }
    live[s].push_back(p);
    // Keep the state moving: free a few, so classes empty and refill.
    for (int j = 0; j < 2; ++j) {
      const int o = static_cast<int>(rng() % 3);
      if (!live[o].empty() && rng() % 2) {
        const std::size_t i = rng() % live[o].size();
        h.free(live[o][i]);
        live[o][i] = live[o].back();
        live[o].pop_back();
      }
    }
  }
  EXPECT_GT(checked, 1200u);
  EXPECT_GT(same, 50u) << "the hint's own class should often have room";
  EXPECT_GT(nearest, 50u) << "and often not";
}
} // namespace

TEST(KBitBest, PlacesInTheHintsClassElseTheNearestK20) {
  struct Tag {};
  auto h = std::make_unique<Heap<Tag, 20>>();
  std::mt19937_64 rng(20);
  bestAgainstModel(*h, rng, /*cross_class=*/false);
}

TEST(KBitBest, PlacesInTheHintsClassElseTheNearestK12) {
  struct Tag {};
  auto h = std::make_unique<Heap<Tag, 12>>();
  std::mt19937_64 rng(12);
  bestAgainstModel(*h, rng, /*cross_class=*/true);
}

TEST(KBitBest, PlacesInTheHintsClassElseTheNearestK26) {
  struct Tag {};
  auto h = std::make_unique<Heap<Tag, 26>>();
  std::mt19937_64 rng(26);
  bestAgainstModel(*h, rng, /*cross_class=*/true);
}

TEST(KBitBest, TiesGoToTheLowerClass) {
  struct Tag {};
  auto h = std::make_unique<Heap<Tag, 20>>();
  auto v = take(*h, 1024, 64); // one span: classes 0..15, 4 chunks each
  const std::uintptr_t k0 = h->classKey(v[0]);
  auto inClass = [&](std::uintptr_t k) {
    std::vector<void *> r;
    for (void *p : v)
      if (h->classKey(p) == k)
        r.push_back(p);
    return r;
  };
  ASSERT_EQ(inClass(k0 + 4).size(), 4u);
  h->free(inClass(k0 + 2)[1]); // classes k0+2 and k0+6 have room,
  h->free(inClass(k0 + 6)[3]); // k0+4 (the hint's) has none
  void *p = h->mallocNear(1024, inClass(k0 + 4)[0]);
  EXPECT_EQ(h->classKey(p), k0 + 2) << "distance 2 both ways: the lower wins";
  void *q = h->mallocNear(1024, inClass(k0 + 4)[0]);
  EXPECT_EQ(h->classKey(q), k0 + 6);
}

// Regression test for a fixed bug (kbit_heap.h, KBitHeap::nearest(), lines 414-417, since the direct_ table
// of f5cdb84): for kDirectMinK <= K <= kDirectMaxK, nearest() returns
// direct_[classKey(hint)] whenever its key matches, without checking that
// this node belongs to the requested size class. A hint inside a span of
// another size class of the same heap therefore makes mallocNear() take a
// chunk of the hint's size class: mallocNear(1000, p16) with p16 from
// malloc(16) returns a 16-byte chunk (heap overflow for the caller), and
// take() erases that node from the wrong size class's tree when it empties.
// Reaches users through defero_alloc_near() and defero::allocator's
// allocate(n, hint) with a hint of another size.
TEST(KBitBest, AHintInAnotherSizeClassNeverYieldsASmallerChunk) {
  struct Tag {};
  auto h = std::make_unique<Heap<Tag, 20>>();
  void *small = h->malloc(16);
  ASSERT_NE(small, nullptr);
  void *big = h->mallocNear(1000, small);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(h->sizeClassOf(big), kbit::classOf(1000));
  EXPECT_GE(h->getSize(big), 1000u);
  checkedFreeMap(*h);
}

// --- Path ------------------------------------------------------------------------------

namespace {
/// Builds a state where every non-empty K-class of size class `cls` holds at
/// least two free chunks, so taking one and freeing it back leaves the class
/// tree exactly as it was.
template <class H>
std::vector<void *> pathState(H &h, std::size_t size, std::size_t chunks, std::mt19937_64 &rng) {
  const unsigned cls = kbit::classOf(size);
  std::vector<void *> v = take(h, size, chunks);
  while (h.freeChunks(cls) != 0) // the last span completely
    v.push_back(h.malloc(size));
  std::map<std::uintptr_t, std::vector<void *>> by_class;
  for (void *p : v)
    by_class[h.classKey(p)].push_back(p);
  std::vector<void *> kept;
  for (auto &[key, ps] : by_class) {
    if (rng() % 2 && ps.size() >= 2) {
      std::shuffle(ps.begin(), ps.end(), rng);
      const std::size_t n = 2 + rng() % (ps.size() - 1);
      for (std::size_t i = 0; i < ps.size(); ++i)
        (i < n ? h.free(ps[i]) : kept.push_back(ps[i]));
    } else {
      kept.insert(kept.end(), ps.begin(), ps.end());
    }
  }
  return kept;
}
} // namespace

TEST(KBitPath, IsATreeWalkThatIsMonotoneInPathValue) {
  struct Tag {};
  for (unsigned k : {20u, 14u}) {
    auto h = std::make_unique<Heap<Tag>>();
    ASSERT_TRUE(h->setK(k));
    std::mt19937_64 rng(k);
    const std::size_t size = 64;
    const unsigned cls = kbit::classOf(size);
    for (int round = 0; round < 3; ++round) {
      auto kept = pathState(*h, size, k == 20 ? 4096 : 131072, rng);
      FreeMap before = checkedFreeMap(*h);
      ASSERT_TRUE(before.count(cls));
      const std::size_t classes = before.at(cls).size();
      ASSERT_GE(classes, 8u);
      // Every path of depth <= 12: its value and where it lands.
      std::vector<std::pair<double, std::uintptr_t>> landed;
      std::set<std::uintptr_t> reached;
      for (unsigned depth = 0; depth <= 12; ++depth)
        for (std::uint64_t bits = 0; bits < (std::uint64_t{1} << depth); ++bits) {
          void *p = h->mallocPath(size, bits, depth);
          ASSERT_NE(p, nullptr);
          const std::uintptr_t key = h->classKey(p);
          landed.push_back({pathValue(bits, depth), key});
          reached.insert(key);
          h->free(p);
        }
      EXPECT_EQ(checkedFreeMap(*h), before) << "take + free back changed the state";
      std::sort(landed.begin(), landed.end());
      for (std::size_t i = 1; i < landed.size(); ++i) {
        ASSERT_LT(landed[i - 1].first, landed[i].first) << "path values are distinct";
        ASSERT_LE(landed[i - 1].second, landed[i].second)
            << "a larger path value landed at a lower class (K=" << k << ")";
      }
      std::set<std::uintptr_t> all;
      for (auto [key, n] : before.at(cls))
        all.insert(key);
      EXPECT_EQ(reached, all) << "paths up to depth 12 reach every node of a "
                              << classes << "-node red-black tree";
      // Extreme paths: all-left is the lowest class, all-right the highest.
      void *lo = h->mallocPath(size, 0, 64);
      EXPECT_EQ(h->classKey(lo), *all.begin());
      h->free(lo);
      void *hi = h->mallocPath(size, ~std::uint64_t{0}, 64);
      EXPECT_EQ(h->classKey(hi), *all.rbegin());
      h->free(hi);
      // Depth 0 is the root: strictly inside when there are >= 3 classes.
      void *root = h->mallocPath(size, 12345, 0);
      EXPECT_GT(h->classKey(root), *all.begin());
      EXPECT_LT(h->classKey(root), *all.rbegin());
      h->free(root);
      for (void *p : kept)
        h->free(p);
    }
  }
}

TEST(KBitPath, RandomPairsAreMonotone) {
  struct Tag {};
  auto h = std::make_unique<Heap<Tag, 20>>();
  std::mt19937_64 rng(99);
  const std::size_t size = 256;
  auto kept = pathState(*h, size, 16 * 200, rng);
  const FreeMap before = checkedFreeMap(*h);
  int compared = 0;
  for (int i = 0; i < 20000; ++i) {
    const unsigned d1 = rng() % 65, d2 = rng() % 65;
    const std::uint64_t b1 = rng(), b2 = rng();
    const double v1 = pathValue(b1, d1), v2 = pathValue(b2, d2);
    if (v1 == v2)
      continue; // indistinguishable in a double beyond depth 52
    void *p1 = h->mallocPath(size, b1, d1);
    const std::uintptr_t k1 = h->classKey(p1);
    h->free(p1);
    void *p2 = h->mallocPath(size, b2, d2);
    const std::uintptr_t k2 = h->classKey(p2);
    h->free(p2);
    ++compared;
    if (v1 < v2) {
      ASSERT_LE(k1, k2) << "pathValue " << v1 << " < " << v2;
    } else {
      ASSERT_GE(k1, k2) << "pathValue " << v1 << " > " << v2;
    }
  }
  EXPECT_GT(compared, 19000);
  EXPECT_EQ(checkedFreeMap(*h), before);
}

TEST(KBitPath, PathValueOrdersSubtrees) {
  EXPECT_EQ(pathValue(0, 0), 0.5);
  EXPECT_EQ(pathValue(0, 1), 0.25);
  EXPECT_EQ(pathValue(1, 1), 0.75);
  EXPECT_EQ(pathValue(0b01, 2), 0.375);
  EXPECT_EQ(pathValue(0b10, 2), 0.625);
  // A node sits between its left and right subtrees.
  for (unsigned d = 0; d < 20; ++d)
    for (std::uint64_t b : {std::uint64_t{0}, std::uint64_t{5}, (std::uint64_t{1} << d) - 1}) {
      b &= (std::uint64_t{1} << d) - 1;
      EXPECT_LT(pathValue(b << 1, d + 1), pathValue(b, d));
      EXPECT_GT(pathValue((b << 1) | 1, d + 1), pathValue(b, d));
    }
}

// --- exhaustion, ownership, introspection --------------------------------------------------

TEST(KBitHeapBasics, ExhaustionOfATinyWindowReturnsNull) {
  struct Tag {};
  auto h = std::make_unique<Heap<Tag, 20, std::size_t{1} << 20>>();
  std::vector<void *> v;
  for (void *p; (p = h->malloc(4096)) != nullptr;)
    v.push_back(p);
  EXPECT_EQ(v.size(), 16u * 16) << "16 spans of 16 chunks of 4 KiB";
  EXPECT_EQ(h->malloc(16), nullptr) << "no span left for another size class";
  EXPECT_EQ(h->mallocNear(16, v[3]), nullptr);
  EXPECT_EQ(h->mallocPath(16, 1, 1), nullptr);
  h->free(v[77]);
  EXPECT_EQ(h->malloc(4096), v[77]) << "a freed chunk is reused";
  EXPECT_EQ(h->malloc(4096), nullptr);
  EXPECT_EQ(h->malloc(kbit::kMaxSmallBytes + 1), nullptr) << "not a small size";
}

TEST(KBitHeapBasics, IntrospectionOfLiveFreeAndInteriorPointers) {
  struct Tag {};
  auto h = std::make_unique<Heap<Tag, 20>>();
  char *p = static_cast<char *>(h->malloc(100)); // class 112
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(addr(p) % kMinAlignment, 0u);
  EXPECT_EQ(h->getSize(p), 112u);
  EXPECT_TRUE(h->isLive(p));
  EXPECT_FALSE(h->isLive(p + 16));
  EXPECT_EQ(h->sizeClassOf(p + 50), kbit::classOf(100));
  EXPECT_EQ(h->bytesToChunkEnd(p), 112u);
  EXPECT_EQ(h->bytesToChunkEnd(p + 100), 12u);
  EXPECT_TRUE(h->owns(p + 111));
  int local = 0;
  EXPECT_FALSE(h->owns(&local));
  EXPECT_FALSE(h->owns(nullptr));
  EXPECT_EQ(h->getSize(&local), 0u);
  EXPECT_EQ(h->sizeClassOf(&local), kbit::kNumClasses);
  EXPECT_EQ(h->bytesToChunkEnd(&local), 0u);
  EXPECT_FALSE(h->isLive(&local));
  std::memset(p, 0xEE, 112);
  h->free(p);
  EXPECT_FALSE(h->isLive(p));
  EXPECT_EQ(h->malloc(112), p) << "the lowest chunk again (First, LIFO list)";
}

TEST(KBitHeapBasics, HeapsSharingAnArenaOwnDisjointSpansWithOneNumbering) {
  struct Tag {};
  auto a = std::make_unique<Heap<Tag, 20>>();
  auto b = std::make_unique<Heap<Tag, 20>>();
  auto va = take(*a, 48, 3000), vb = take(*b, 48, 3000);
  EXPECT_EQ(a->base(), b->base());
  std::set<void *> all(va.begin(), va.end());
  all.insert(vb.begin(), vb.end());
  EXPECT_EQ(all.size(), 6000u);
  for (void *p : va) {
    EXPECT_TRUE(a->owns(p));
    EXPECT_FALSE(b->owns(p));
    EXPECT_EQ(b->getSize(p), 0u);
  }
  for (void *p : vb) {
    EXPECT_TRUE(b->owns(p));
    EXPECT_FALSE(a->owns(p));
    EXPECT_EQ(a->classKey(p), b->classKey(p));
  }
  for (void *p : va)
    a->free(p);
  for (void *p : vb)
    b->free(p);
  checkedFreeMap(*a);
  checkedFreeMap(*b);
}

// Regression test for a fixed bug (kbit_heap.h, KBitHeap::free ~line 172 -> release): free(nullptr) is
// reported as a foreign pointer and aborts ("defero: free((nil)): pointer
// not allocated by this heap"), while every other layer (MmapHeap,
// SizeHeaderHeap, FreeListHeap, SizeClassHeap, DebugHeap, StatsHeap) treats
// free(nullptr) as a no-op like C's free. Compositions that pass a null
// through (TraceHeap<KBitHeap>, ThreadHeap<N, LockedHeap<.., KBitHeap>>,
// whose free routes an unowned pointer to heap 0) abort on free(nullptr).
TEST(KBitHeapBasics, FreeOfNullIsANoOp) {
  struct Tag {};
  auto h = std::make_unique<Heap<Tag, 20>>();
  EXPECT_EXIT(
      {
        h->free(nullptr);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// Regression test for a fixed bug (kbit_heap.h, refill() ~line 349 / file() ~line 368, the direct_
// table of f5cdb84): direct_ assumes a K-class lies inside one span page
// ("K-class <= 64 KiB span page"), but it is switched on for
// kDirectMinK <= K <= kDirectMaxK whatever Super::kSpanBytes is. Over a
// SpanArena<W, 4096> with K=16, one 64 KiB K-class covers 16 span pages of
// different size classes; file() then finds direct_[key] holding another
// size class's node and files the chunk there. Repro: malloc(16) then
// malloc(32): refill(class 1) files every 32-byte chunk into class 0's node,
// trees_[1] stays empty and allocateClass dereferences its begin() (SIGSEGV).
TEST(KBitHeapBasics, DirectTableWithSpansSmallerThanAKClass) {
  struct Tag {};
  using SmallSpans = Heap<Tag, 16, kWindow, 4096>;
  auto run = [] {
    auto h = std::make_unique<SmallSpans>();
    void *a = h->malloc(16);
    void *b = h->malloc(32);
    bool ok = a && b && h->sizeClassOf(b) == kbit::classOf(32);
    h->forEachFreeChunk([&](void *c, unsigned cls, std::uintptr_t) {
      ok = ok && h->sizeClassOf(c) == cls;
    });
    std::exit(ok ? 0 : 1);
  };
  EXPECT_EXIT(run(), ::testing::ExitedWithCode(0), "");
}

// --- integrity: release() reports misuse --------------------------------------------------

TEST(KBitHeapDeathTest, DoubleFree) {
  struct Tag {};
  auto h = std::make_unique<Heap<Tag, 20>>();
  void *p = h->malloc(64);
  void *q = h->malloc(64);
  h->free(p);
  EXPECT_DEATH(h->free(p), test::fatalLine("free", p, test::kDoubleFree));
  EXPECT_DEATH(h->release(p, "defero_free"), test::fatalLine("defero_free", p, test::kDoubleFree));
  h->free(q);
}

TEST(KBitHeapDeathTest, InteriorPointer) {
  struct Tag {};
  auto h = std::make_unique<Heap<Tag, 20>>();
  char *p = static_cast<char *>(h->malloc(1000)); // class 1024
  EXPECT_DEATH(h->free(p + 16), test::fatalLine("free", p + 16, test::kInterior));
  EXPECT_DEATH(h->release(p + 1023, "operator delete"),
               test::fatalLine("operator delete", p + 1023, test::kInterior));
  h->free(p);
}

TEST(KBitHeapDeathTest, ForeignPointers) {
  struct Tag {};
  auto h = std::make_unique<Heap<Tag, 20>>();
  auto other = std::make_unique<Heap<Tag, 20>>(); // same arena, other heap
  void *mine = h->malloc(32);
  void *theirs = other->malloc(32);
  int local = 0;
  void *glibc = std::malloc(32);
  EXPECT_DEATH(h->free(&local), test::fatalLine("free", &local, test::kForeign));
  EXPECT_DEATH(h->free(glibc), test::fatalLine("free", glibc, test::kForeign));
  EXPECT_DEATH(h->free(theirs), test::fatalLine("free", theirs, test::kForeign))
      << "a chunk of another heap in the same window";
  EXPECT_DEATH(h->release(&local, "realloc"), test::fatalLine("realloc", &local, test::kForeign));
  std::free(glibc);
  h->free(mine);
  other->free(theirs);
}
