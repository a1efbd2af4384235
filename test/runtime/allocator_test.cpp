// allocator_test.cpp - defero::allocator<T, KBit<K>, Predicate> in standard
// containers, hinted allocation through allocate(n, hint), rebinding, large
// and over-aligned objects, and its error cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <cstdint>
#include <deque>
#include <forward_list>
#include <list>
#include <map>
#include <memory>
#include <new>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "defero/allocator.h"
#include "test_util.h"

using defero::allocator;
using defero::Best;
using defero::First;
using defero::KBit;
using defero::Path;
namespace test = defero::test;

namespace {

std::uintptr_t addr(const void *p) { return reinterpret_cast<std::uintptr_t>(p); }

template <class Partition> auto &smallHeap() {
  return defero::detail::AllocatorHeaps<Partition>::small();
}

/// True if p lies in a chunk of the partition's small-object heap.
template <class Partition> bool fromKBitHeap(const void *p) {
  return smallHeap<Partition>().owns(p);
}

} // namespace

// --- containers -------------------------------------------------------------

TEST(AllocatorContainers, ListWithBest) {
  using A = allocator<int, KBit<12>, Best>;
  std::list<int, A> l;
  std::list<int> ref;
  std::mt19937 rng(1);
  for (int i = 0; i < 20000; ++i) {
    const unsigned r = rng() % 10;
    const int v = static_cast<int>(rng());
    if (r < 4) {
      l.push_back(v);
      ref.push_back(v);
    } else if (r < 6) {
      l.push_front(v);
      ref.push_front(v);
    } else if (r < 8 && !ref.empty()) {
      const auto at = static_cast<long>(std::min<std::size_t>(rng() % 64, ref.size()));
      l.insert(std::next(l.begin(), at), v);
      ref.insert(std::next(ref.begin(), at), v);
    } else if (!ref.empty()) {
      l.pop_front();
      ref.pop_front();
    }
  }
  ASSERT_EQ(l.size(), ref.size());
  EXPECT_TRUE(std::equal(l.begin(), l.end(), ref.begin()));
  for (const int &x : l)
    ASSERT_TRUE(fromKBitHeap<KBit<12>>(&x)) << "list nodes come from the K-Bit heap";
  l.sort();
  ref.sort();
  EXPECT_TRUE(std::equal(l.begin(), l.end(), ref.begin()));
}

TEST(AllocatorContainers, MapWithFirstAndStringValues) {
  using V = std::pair<const int, std::string>;
  std::map<int, std::string, std::less<int>, allocator<V, KBit<20>, First>> m;
  std::map<int, std::string> ref;
  std::mt19937 rng(2);
  for (int i = 0; i < 30000; ++i) {
    const int k = static_cast<int>(rng() % 5000);
    if (rng() % 3) {
      const std::string v(rng() % 40, static_cast<char>('a' + k % 26));
      m[k] = v;
      ref[k] = v;
    } else {
      EXPECT_EQ(m.erase(k), ref.erase(k));
    }
  }
  ASSERT_EQ(m.size(), ref.size());
  EXPECT_TRUE(std::equal(m.begin(), m.end(), ref.begin(), ref.end()));
  for (const auto &kv : m)
    ASSERT_TRUE(fromKBitHeap<KBit<20>>(&kv));
}

TEST(AllocatorContainers, SetAndMultisetWithPath) {
  std::set<long, std::less<long>, allocator<long, KBit<16>, Path>> s;
  std::multiset<long, std::less<long>, allocator<long, KBit<16>, Path>> ms;
  std::set<long> ref;
  std::multiset<long> mref;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 30000; ++i) {
    const long v = static_cast<long>(rng() % 10000);
    if (rng() % 4) {
      s.insert(v);
      ref.insert(v);
      ms.insert(v % 100);
      mref.insert(v % 100);
    } else {
      s.erase(v);
      ref.erase(v);
      auto it = ms.find(v % 100);
      if (it != ms.end())
        ms.erase(it);
      auto jt = mref.find(v % 100);
      if (jt != mref.end())
        mref.erase(jt);
    }
  }
  EXPECT_TRUE(std::equal(s.begin(), s.end(), ref.begin(), ref.end()));
  EXPECT_TRUE(std::equal(ms.begin(), ms.end(), mref.begin(), mref.end()));
  for (const long &x : s)
    ASSERT_TRUE(fromKBitHeap<KBit<16>>(&x));
}

TEST(AllocatorContainers, UnorderedMapAndForwardListWithBest) {
  using V = std::pair<const int, int>;
  std::unordered_map<int, int, std::hash<int>, std::equal_to<int>, allocator<V, KBit<20>, Best>> u;
  std::unordered_map<int, int> ref;
  std::forward_list<int, allocator<int, KBit<20>, Best>> fl;
  std::forward_list<int> fref;
  std::mt19937 rng(4);
  for (int i = 0; i < 50000; ++i) {
    const int k = static_cast<int>(rng() % 20000);
    switch (rng() % 4) {
    case 0:
    case 1:
      u[k] += i;
      ref[k] += i;
      break;
    case 2:
      EXPECT_EQ(u.erase(k), ref.erase(k));
      break;
    default:
      fl.push_front(k);
      fref.push_front(k);
    }
  }
  ASSERT_EQ(u.size(), ref.size());
  for (const auto &[k, v] : ref) {
    auto it = u.find(k);
    ASSERT_NE(it, u.end());
    EXPECT_EQ(it->second, v);
  }
  EXPECT_GT(u.bucket_count() * sizeof(void *), defero::kbit::kMaxSmallBytes)
      << "the bucket array is a large allocation";
  fl.reverse();
  fref.reverse();
  EXPECT_TRUE(std::equal(fl.begin(), fl.end(), fref.begin(), fref.end()));
  u.rehash(0);
  u.clear();
  EXPECT_TRUE(u.empty());
}

TEST(AllocatorContainers, VectorAndDequeGrowPastTheSmallObjectLimit) {
  std::vector<int, allocator<int, KBit<20>, First>> v;
  std::deque<std::uint64_t, allocator<std::uint64_t, KBit<20>, Best>> d;
  for (int i = 0; i < 300000; ++i) {
    v.push_back(i * 3);
    d.push_back(static_cast<std::uint64_t>(i) << 20);
    if (i % 3 == 0)
      d.pop_front();
  }
  for (int i = 0; i < 300000; ++i)
    ASSERT_EQ(v[static_cast<std::size_t>(i)], i * 3);
  EXPECT_FALSE(fromKBitHeap<KBit<20>>(v.data())) << "1.2 MB come from the page heap";
  std::uint64_t expect = 100000;
  for (std::uint64_t x : d)
    ASSERT_EQ(x, (expect++) << 20);
}

// --- hints --------------------------------------------------------------------

namespace {
struct Node48 {
  std::array<char, 48> bytes;
};

/// A state with room in class A (of some object `a`), and a free chunk in a
/// lower class (so First would go there instead).
struct RoomSetup {
  std::vector<Node48 *> held;
  Node48 *a = nullptr;
  std::uintptr_t class_a = 0, lower = 0;
};

template <class Partition> RoomSetup makeRoom() {
  allocator<Node48, Partition, First> alloc;
  RoomSetup s;
  std::vector<Node48 *> v;
  for (int i = 0; i < 600; ++i)
    v.push_back(alloc.allocate(1));
  std::map<std::uintptr_t, std::vector<Node48 *>> by;
  for (Node48 *p : v)
    by[alloc.classOf(p)].push_back(p);
  EXPECT_GE(by.size(), 3u);
  auto lowest = by.begin();
  auto it = std::next(by.begin());
  while (it != by.end() && it->second.size() < 2)
    ++it;
  EXPECT_NE(it, by.end());
  if (it == by.end())
    return s;
  s.a = it->second[0];
  s.class_a = it->first;
  s.lower = lowest->first;
  for (Node48 *p : v)
    if (p != it->second[1] && p != lowest->second[0])
      s.held.push_back(p);
  alloc.deallocate(it->second[1], 1);     // room in A
  alloc.deallocate(lowest->second[0], 1); // and in a lower class
  return s;
}
} // namespace

TEST(AllocatorHints, BestPlacesInTheHintsClassWhenItHasRoom) {
  using P = KBit<20>;
  RoomSetup s = makeRoom<P>();
  ASSERT_NE(s.a, nullptr);
  allocator<Node48, P, Best> best;
  Node48 *p = best.allocate(1, s.a);
  EXPECT_EQ(best.classOf(p), s.class_a) << "Best: the hint's own class";
  best.deallocate(p, 1);
  // Through allocator_traits, as a container would pass a hint.
  using Traits = std::allocator_traits<allocator<Node48, P, Best>>;
  p = Traits::allocate(best, 1, s.a);
  EXPECT_EQ(best.classOf(p), s.class_a);
  best.deallocate(p, 1);
  // Path given an address behaves like Best.
  allocator<Node48, P, Path> path;
  p = path.allocate(1, s.a);
  EXPECT_EQ(path.classOf(p), s.class_a);
  path.deallocate(p, 1);
  // First ignores the hint: the lowest class with room.
  allocator<Node48, P, First> first;
  p = first.allocate(1, s.a);
  EXPECT_NE(first.classOf(p), s.class_a);
  EXPECT_LE(first.classOf(p), s.lower);
  first.deallocate(p, 1);
  for (Node48 *q : s.held)
    first.deallocate(q, 1);
}

TEST(AllocatorHints, BestFallsBackToTheNearestClassWithRoom) {
  using P = KBit<22>; // 1 KiB classes
  RoomSetup s = makeRoom<P>();
  ASSERT_NE(s.a, nullptr);
  allocator<Node48, P, Best> best;
  Node48 *fill = best.allocate(1, s.a); // takes A's room
  ASSERT_EQ(best.classOf(fill), s.class_a);
  const unsigned cls = defero::kbit::classOf(sizeof(Node48));
  for (int i = 0; i < 50; ++i) {
    // The expected class, from the heap's own free lists.
    std::map<std::uintptr_t, int> keys;
    smallHeap<P>().withLock([&](auto &h) {
      h.forEachFreeChunk([&](void *, unsigned c, std::uintptr_t k) {
        if (c == cls)
          ++keys[k];
      });
    });
    ASSERT_FALSE(keys.empty());
    const std::uintptr_t want = best.classOf(s.a);
    std::uintptr_t expect;
    auto hi = keys.lower_bound(want);
    if (hi != keys.end() && hi->first == want)
      expect = want;
    else if (hi == keys.begin())
      expect = hi->first;
    else if (hi == keys.end() || want - std::prev(hi)->first <= hi->first - want)
      expect = std::prev(hi)->first;
    else
      expect = hi->first;
    Node48 *p = best.allocate(1, s.a);
    EXPECT_EQ(best.classOf(p), expect) << "allocation " << i;
    s.held.push_back(p);
  }
  s.held.push_back(fill);
  for (Node48 *q : s.held)
    best.deallocate(q, 1);
}

// Regression test for a fixed bug (kbit_heap.h, KBitHeap::nearest(); see kbit_heap_test.cpp): a hint of
// another size class in the same K-class yields a chunk of the hint's size
// class, so allocate(1000, hint_to_a_16_byte_object) returns 16 usable bytes.
TEST(AllocatorHints, AHintOfAnotherSizeNeverShrinksTheBlock) {
  using P = KBit<20>;
  allocator<char, P, Best> a;
  char *small = a.allocate(16);
  char *big = a.allocate(1000, small);
  EXPECT_GE(smallHeap<P>().getSize(big), 1000u);
  a.deallocate(big, 1000);
  a.deallocate(small, 16);
}

// --- rebind, equality ---------------------------------------------------------------

TEST(AllocatorTraits, RebindAndEquality) {
  using A = allocator<int, KBit<12>, Best>;
  using B = std::allocator_traits<A>::rebind_alloc<double>;
  static_assert(std::is_same_v<B, allocator<double, KBit<12>, Best>>);
  static_assert(std::is_same_v<A::rebind<char>::other, allocator<char, KBit<12>, Best>>);
  static_assert(std::allocator_traits<A>::is_always_equal::value);
  static_assert(std::is_same_v<A::value_type, int>);
  static_assert(std::is_same_v<A::partition_type, KBit<12>>);
  static_assert(std::is_same_v<A::predicate_type, Best>);
  A a;
  B b(a); // converting copy
  EXPECT_TRUE(a == b);
  EXPECT_TRUE(b == a);
  EXPECT_FALSE(a != b);
  EXPECT_TRUE(a == A{});
  // Memory from one instance goes back through a rebound copy.
  double *d = b.allocate(3);
  d[0] = 1.5;
  allocator<double, KBit<12>, Best> b2(A{});
  b2.deallocate(d, 3);
  int *i = a.allocate(1);
  EXPECT_EQ(A::classOf(i), B::classOf(i)) << "one heap per partition";
  A(b).deallocate(i, 1);
  // Containers move and swap nodes between instances.
  std::list<int, A> l1{1, 2, 3}, l2{4};
  l1.swap(l2);
  l2.splice(l2.end(), l1);
  EXPECT_EQ(std::vector<int>(l2.begin(), l2.end()), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_TRUE(l1.empty());
}

// --- large, over-aligned, errors ------------------------------------------------------

TEST(AllocatorLimits, AllocationsAbove32KiBWork) {
  allocator<char, KBit<20>, Best> a;
  for (std::size_t n : {std::size_t{32768}, std::size_t{32769}, std::size_t{100000},
                        std::size_t{5} << 20}) {
    char *p = a.allocate(n, nullptr);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(addr(p) % 16, 0u);
    test::fill(p, n, n);
    EXPECT_EQ(test::checkFill(p, n, n), n);
    if (n > defero::kbit::kMaxSmallBytes) {
      EXPECT_FALSE(fromKBitHeap<KBit<20>>(p));
      EXPECT_EQ(addr(p) % 4096, 0u);
    } else {
      EXPECT_TRUE(fromKBitHeap<KBit<20>>(p));
    }
    a.deallocate(p, n);
  }
}

namespace {
struct alignas(64) Line {
  char c[100];
};
struct alignas(4096) PageObj {
  int v;
};
} // namespace

TEST(AllocatorLimits, OverAlignedTypes) {
  allocator<Line, KBit<20>, Best> a;
  allocator<PageObj, KBit<20>, Best> b;
  for (std::size_t n : {1, 2, 7}) {
    Line *p = a.allocate(n);
    EXPECT_EQ(addr(p) % 64, 0u);
    std::memset(p, 1, n * sizeof(Line));
    a.deallocate(p, n);
    PageObj *q = b.allocate(n, p);
    EXPECT_EQ(addr(q) % 4096, 0u);
    q[n - 1].v = 7;
    b.deallocate(q, n);
  }
  std::list<Line, allocator<Line, KBit<20>, Best>> l(50);
  for (Line &x : l) {
    EXPECT_EQ(addr(&x) % 64, 0u);
    x.c[99] = 'z';
  }
  std::vector<PageObj, allocator<PageObj, KBit<20>, First>> v(5);
  EXPECT_EQ(addr(v.data()) % 4096, 0u);
}

TEST(AllocatorLimits, HugeCountsThrow) {
  allocator<int, KBit<20>, Best> a;
  allocator<Line, KBit<20>, First> big;
  EXPECT_EQ(a.max_size(), SIZE_MAX / sizeof(int));
  EXPECT_THROW((void)a.allocate(a.max_size() + 1), std::bad_array_new_length);
  EXPECT_THROW((void)a.allocate(SIZE_MAX), std::bad_array_new_length);
  EXPECT_THROW((void)big.allocate(SIZE_MAX / 64 + 1, nullptr), std::bad_array_new_length);
  EXPECT_THROW((void)a.allocate(a.max_size()), std::bad_alloc)
      << "a representable but impossible size";
  int *ok = a.allocate(0);
  a.deallocate(ok, 0);
  a.deallocate(nullptr, 0);
}

TEST(AllocatorDeathTest, DoubleDeallocateIsReported) {
  allocator<long, KBit<20>, Best> a;
  long *p = a.allocate(1);
  a.deallocate(p, 1);
  EXPECT_DEATH(a.deallocate(p, 1),
               test::fatalLine("defero::allocator::deallocate", p, test::kDoubleFree));
}
