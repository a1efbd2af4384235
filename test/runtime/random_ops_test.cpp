// random_ops_test.cpp - long randomised operation sequences checked against
// a simple model (std::map of live blocks): for the KBitHeap directly (the
// heap of defero::allocator) and for the process heap through the C API
// (unhinted; the hinted placement's model test is placement_model_test.cpp).
// Fixed seeds; ~200k ops each.
//
// Checked on every allocation: not null, 16-byte aligned, usable size >=
// requested, no overlap with any live block. Every block is filled with a
// pattern that must be intact when it is freed (and at random checks).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "defero/defero.h"
#include "defero/heaplayers/top/shared_arena.h"
#include "defero/heaplayers/top/span_arena.h"
#include "defero/kbit/kbit_heap.h"
#include "test_util.h"

using namespace defero;

namespace {

std::uintptr_t addr(const void *p) { return reinterpret_cast<std::uintptr_t>(p); }

struct Live {
  void *p;
  std::size_t size;   // requested
  std::size_t usable; // what the heap reports
  std::uint64_t seed;
};

/// The model: live blocks by address (for overlap) and in a vector (for
/// picking one at random).
class Model {
public:
  /// Adds a fresh block; false (with a message) if it breaks a rule.
  ::testing::AssertionResult add(const Live &b) {
    if (!b.p)
      return ::testing::AssertionFailure() << "allocation of " << b.size << " failed";
    if (addr(b.p) % kMinAlignment)
      return ::testing::AssertionFailure() << b.p << " is not 16-byte aligned";
    if (b.usable < b.size)
      return ::testing::AssertionFailure()
             << "usable " << b.usable << " < requested " << b.size << " at " << b.p;
    auto next = by_addr_.lower_bound(addr(b.p));
    if (next != by_addr_.end() && next->first < addr(b.p) + b.usable)
      return ::testing::AssertionFailure()
             << "[" << b.p << ", +" << b.usable << ") overlaps live block at "
             << reinterpret_cast<void *>(next->first);
    if (next != by_addr_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + vec_[prev->second].usable > addr(b.p))
        return ::testing::AssertionFailure()
               << b.p << " lies inside live block " << reinterpret_cast<void *>(prev->first);
    }
    by_addr_[addr(b.p)] = vec_.size();
    vec_.push_back(b);
    test::fillFast(b.p, b.size, b.seed);
    return ::testing::AssertionSuccess();
  }
  /// Removes the i-th live block and returns it.
  Live remove(std::size_t i) {
    Live b = vec_[i];
    by_addr_.erase(addr(b.p));
    if (i != vec_.size() - 1) {
      vec_[i] = vec_.back();
      by_addr_[addr(vec_[i].p)] = i;
    }
    vec_.pop_back();
    return b;
  }
  std::size_t size() const { return vec_.size(); }
  const Live &at(std::size_t i) const { return vec_[i]; }
  bool containsFree(const void *c, std::size_t bytes) const {
    auto next = by_addr_.upper_bound(addr(c));
    if (next != by_addr_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + vec_[prev->second].usable > addr(c))
        return true;
    }
    return next != by_addr_.end() && next->first < addr(c) + bytes;
  }

private:
  std::map<std::uintptr_t, std::size_t> by_addr_;
  std::vector<Live> vec_;
};

std::size_t randomSize(std::mt19937_64 &rng, bool with_large) {
  const unsigned r = rng() % 100;
  if (with_large && r == 0)
    return kbit::kMaxSmallBytes + 1 + rng() % (512 * 1024);
  if (r < 70)
    return rng() % 257; // 0..256, 0 included
  if (r < 95)
    return 257 + rng() % (4096 - 256);
  return 4097 + rng() % (kbit::kMaxSmallBytes - 4096);
}

} // namespace

// --- KBitHeap ------------------------------------------------------------------

TEST(RandomOps, KBitHeapAgainstAModel) {
  struct Tag {};
  using Heap = KBitHeap<SharedArena<SpanArena<std::size_t{1} << 34, 65536>, Tag>, 20>;
  auto h = std::make_unique<Heap>();
  std::mt19937_64 rng(0xDEFE20);
  Model m;
  std::uint64_t seed = 1;
  std::size_t allocs = 0, frees = 0;
  constexpr int kOps = 200000;
  for (int op = 0; op < kOps; ++op) {
    const unsigned r = rng() % 100;
    const bool grow = m.size() < 3000 ? r < 60 : r < 40;
    if (grow || m.size() == 0) {
      const std::size_t sz = randomSize(rng, false);
      const unsigned pred = rng() % 10;
      void *p;
      if (pred < 3 && m.size()) {
        // Best: a hint from a live block of the same size class if one of
        // four picks has it (the container case), else no hint.
        const void *hint = nullptr;
        for (int t = 0; t < 4 && !hint; ++t) {
          const Live &b = m.at(rng() % m.size());
          if (h->sizeClassOf(b.p) == kbit::classOf(sz))
            hint = static_cast<const char *>(b.p) + rng() % b.usable;
        }
        p = h->mallocNear(sz, hint);
      } else if (pred < 5) {
        p = h->mallocPath(sz, rng(), static_cast<unsigned>(rng() % 65));
      } else {
        p = h->malloc(sz);
      }
      const std::size_t usable = p ? h->getSize(p) : 0;
      ASSERT_TRUE(m.add({p, sz, usable, seed++})) << "op " << op;
      ASSERT_TRUE(h->isLive(p));
      ++allocs;
    } else if (r < 95) {
      const Live b = m.remove(rng() % m.size());
      ASSERT_TRUE(test::checkFast(b.p, b.size, b.seed))
          << "block " << b.p << " of " << b.size << " changed before its free (op " << op << ")";
      h->free(b.p);
      ++frees;
    } else {
      const Live &b = m.at(rng() % m.size());
      ASSERT_TRUE(test::checkFast(b.p, b.size, b.seed)) << "op " << op;
    }
    if (op % 40000 == 39999) {
      // The free lists: filed under their top K bits, disjoint from every
      // live block.
      std::size_t bad_key = 0, overlapping = 0, n = 0;
      h->forEachFreeChunk([&](void *c, unsigned cls, std::uintptr_t key) {
        ++n;
        bad_key += key != h->classKey(c);
        overlapping += m.containsFree(c, kbit::kClassBytes[cls]);
      });
      ASSERT_EQ(bad_key, 0u) << "op " << op;
      ASSERT_EQ(overlapping, 0u) << "free chunks overlapping live blocks, op " << op;
      ASSERT_GT(n, 0u);
    }
  }
  while (m.size()) {
    const Live b = m.remove(m.size() - 1);
    ASSERT_TRUE(test::checkFast(b.p, b.size, b.seed));
    h->free(b.p);
    ++frees;
  }
  EXPECT_EQ(allocs, frees);
  EXPECT_EQ(h->allocCount(), allocs);
  EXPECT_EQ(h->freeCount(), frees);
  std::size_t free_chunks = 0;
  for (unsigned c = 0; c < kbit::kNumClasses; ++c)
    free_chunks += h->freeChunks(c) * kbit::kClassBytes[c];
  EXPECT_EQ(free_chunks, h->freeBytes());
}

// --- C API ------------------------------------------------------------------------

namespace {

/// One number from defero_stats_json.
long long statsValue(const std::string &key) {
  test::TempFile f;
  FILE *out = std::fopen(f.path().c_str(), "w");
  EXPECT_NE(out, nullptr);
  EXPECT_EQ(defero_stats_json(out), 0);
  std::fclose(out);
  std::map<std::string, std::string> j;
  EXPECT_TRUE(test::Json::parse(f.contents(), j)) << f.contents();
  EXPECT_TRUE(j.count(key)) << key;
  return std::stoll(j[key]);
}

/// Runs `ops` random C API operations on this thread against a model.
/// Blocks pushed to `outbox` are handed to another thread, which frees them.
void cApiOps(std::uint64_t seed0, int ops, Model &m, std::size_t &allocs, std::size_t &frees,
             std::vector<Live> *outbox = nullptr, std::mutex *outbox_lock = nullptr,
             std::vector<Live> *inbox = nullptr, std::mutex *inbox_lock = nullptr) {
  std::mt19937_64 rng(seed0);
  std::uint64_t seed = seed0 << 32;
  for (int op = 0; op < ops; ++op) {
    const unsigned r = rng() % 100;
    const bool grow = m.size() < 2000 ? r < 60 : r < 40;
    if (grow || m.size() == 0) {
      const std::size_t sz = randomSize(rng, true);
      const unsigned pred = rng() % 10;
      void *p;
      if (pred < 3 && m.size()) {
        const void *hint = nullptr;
        for (int t = 0; t < 4 && !hint; ++t) {
          const Live &b = m.at(rng() % m.size());
          if (sz <= kbit::kMaxSmallBytes && b.usable == kbit::kClassBytes[kbit::classOf(sz)])
            hint = b.p;
        }
        p = defero_alloc_near(sz, hint);
      } else if (pred < 5) {
        p = defero_alloc_path(sz, rng(), static_cast<unsigned>(rng() % 80));
      } else {
        p = defero_malloc(sz);
      }
      ASSERT_TRUE(m.add({p, sz, defero_usable_size(p), seed++})) << "op " << op;
      ++allocs;
    } else if (r < 96) {
      Live b = m.remove(rng() % m.size());
      ASSERT_TRUE(test::checkFast(b.p, b.size, b.seed))
          << "block " << b.p << " of " << b.size << " changed before its free (op " << op << ")";
      if (outbox && rng() % 2) {
        std::lock_guard<std::mutex> g(*outbox_lock);
        outbox->push_back(b); // another thread frees it
      } else {
        defero_free(b.p);
        ++frees;
      }
    } else {
      const Live &b = m.at(rng() % m.size());
      ASSERT_TRUE(test::checkFast(b.p, b.size, b.seed)) << "op " << op;
    }
    if (inbox && op % 64 == 0) {
      std::vector<Live> mine;
      {
        std::lock_guard<std::mutex> g(*inbox_lock);
        mine.swap(*inbox);
      }
      for (const Live &b : mine) {
        ASSERT_TRUE(test::checkFast(b.p, b.size, b.seed)) << "cross-thread block " << b.p;
        defero_free(b.p);
        ++frees;
      }
    }
  }
}

} // namespace

TEST(RandomOps, CApiAgainstAModel) {
  const long long allocs0 = statsValue("allocs"), frees0 = statsValue("frees");
  Model m;
  std::size_t allocs = 0, frees = 0;
  cApiOps(0xC0FFEE, 200000, m, allocs, frees);
  if (HasFatalFailure())
    return;
  while (m.size()) {
    const Live b = m.remove(m.size() - 1);
    ASSERT_TRUE(test::checkFast(b.p, b.size, b.seed));
    defero_free(b.p);
    ++frees;
  }
  EXPECT_EQ(statsValue("allocs") - allocs0, static_cast<long long>(allocs));
  EXPECT_EQ(statsValue("frees") - frees0, static_cast<long long>(frees));
  EXPECT_EQ(allocs, frees);
}

TEST(RandomOps, CApiFromFourThreadsWithCrossThreadFrees) {
  constexpr int kThreads = 4;
  const long long allocs0 = statsValue("allocs"), frees0 = statsValue("frees");
  std::vector<Live> box[kThreads];
  std::mutex lock[kThreads];
  Model models[kThreads];
  std::size_t allocs[kThreads] = {}, frees[kThreads] = {};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      const int to = (t + 1) % kThreads;
      cApiOps(1000 + t, 40000, models[t], allocs[t], frees[t], &box[to], &lock[to], &box[t],
              &lock[t]);
    });
  for (auto &t : ts)
    t.join();
  ASSERT_FALSE(HasFailure());
  // Whatever is still live or in transit: no block handed out twice.
  Model all;
  std::size_t total_allocs = 0, total_frees = 0;
  for (int t = 0; t < kThreads; ++t) {
    total_allocs += allocs[t];
    total_frees += frees[t];
    for (const Live &b : box[t]) { // in transit: still live
      ASSERT_TRUE(test::checkFast(b.p, b.size, b.seed));
      ASSERT_TRUE(models[t].add(b));
    }
  }
  for (int t = 0; t < kThreads; ++t)
    while (models[t].size()) {
      Live b = models[t].remove(models[t].size() - 1);
      ASSERT_TRUE(test::checkFast(b.p, b.size, b.seed));
      b.seed = 0;
      ASSERT_TRUE(all.add(b)) << "two threads hold the same memory";
    }
  while (all.size()) {
    defero_free(all.remove(all.size() - 1).p);
    ++total_frees;
  }
  EXPECT_EQ(total_allocs, total_frees);
  EXPECT_EQ(statsValue("allocs") - allocs0, static_cast<long long>(total_allocs));
  EXPECT_EQ(statsValue("frees") - frees0, static_cast<long long>(total_frees));
}
