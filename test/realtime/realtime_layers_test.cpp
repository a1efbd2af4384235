// The real-time backends as heap layers: BuddyHeap over the software engine
// (links inside the free blocks) and over the Verilated OBS and RBS (the
// runtime's "rt" models), against the reference model BuddyCore<VectorLinks>,
// operation by operation; invalid frees, exhaustion, alignment, and the
// cycle counts the hardware engines report.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "Vbuddy_obs_rt.h"
#include "Vbuddy_rbs_rt.h"
#include "defero/buddy/buddy_heap.h"
#include "defero/buddy/hw_buddy.h"

namespace {

using defero::buddy::BuddyCore;
using defero::buddy::BuddyHeap;
using defero::buddy::HardwareBuddy;
using defero::buddy::SoftwareBuddy;
using Obs = HardwareBuddy<Vbuddy_obs_rt, DEFERO_TEST_HEAP_LOG>;
using Rbs = HardwareBuddy<Vbuddy_rbs_rt, DEFERO_TEST_HEAP_LOG>;

std::uint64_t offsetOf(const void *p, const char *base) {
  return static_cast<std::uint64_t>(static_cast<const char *>(p) - base);
}

TEST(BuddyHeapLayer, InitRejectsNonsense) {
  BuddyHeap<SoftwareBuddy> sw;
  EXPECT_FALSE(sw.init(3 << 20)) << "not a power of two";
  EXPECT_FALSE(sw.init(0));
  EXPECT_FALSE(sw.init(8)) << "smaller than the smallest block";
  ASSERT_TRUE(sw.init(1 << 20));
  EXPECT_FALSE(sw.init(1 << 20)) << "started twice";
  BuddyHeap<Obs> obs;
  EXPECT_FALSE(obs.init(std::uint64_t{1} << (DEFERO_TEST_HEAP_LOG + 1)))
      << "larger than the model was Verilated for";
  EXPECT_TRUE(obs.init(1 << 16));
}

// Software engine (links in the arena) and both hardware engines against
// the reference model: same offsets, sizes, out-of-memory points, invalid
// frees; the reference's invariants hold throughout.
TEST(BuddyHeapLayer, EnginesAgreeWithTheReferenceModel) {
  constexpr std::uint64_t kHeap = 1 << 22;
  BuddyCore<> ref(kHeap, 16);
  BuddyHeap<SoftwareBuddy> sw;
  BuddyHeap<Obs> obs;
  BuddyHeap<Rbs> rbs;
  ASSERT_TRUE(sw.init(kHeap));
  ASSERT_TRUE(obs.init(kHeap));
  ASSERT_TRUE(rbs.init(kHeap));
  for (auto *b : {sw.base(), obs.base(), rbs.base()})
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(b) % kHeap, 0u) << "arena aligned to its size";

  std::mt19937_64 rng(11);
  std::vector<std::uint64_t> live;
  long ooms = 0, invalid = 0;
  for (long i = 0; i < 40000; ++i) {
    const unsigned pick = static_cast<unsigned>(rng() % 100);
    if (live.empty() || pick < 55) {
      const std::uint64_t bytes = pick % 11 == 0 ? rng() % (kHeap / 4) : rng() % 900;
      const std::int64_t want = ref.alloc(bytes);
      void *a = sw.malloc(bytes), *b = obs.malloc(bytes), *c = rbs.malloc(bytes);
      if (want < 0) {
        ASSERT_EQ(a, nullptr) << "op " << i;
        ASSERT_EQ(b, nullptr) << "op " << i;
        ASSERT_EQ(c, nullptr) << "op " << i;
        ++ooms;
        continue;
      }
      ASSERT_NE(a, nullptr) << "op " << i;
      ASSERT_EQ(offsetOf(a, sw.base()), static_cast<std::uint64_t>(want)) << "op " << i;
      ASSERT_EQ(offsetOf(b, obs.base()), static_cast<std::uint64_t>(want)) << "op " << i;
      ASSERT_EQ(offsetOf(c, rbs.base()), static_cast<std::uint64_t>(want)) << "op " << i;
      const std::uint64_t size = ref.blockSize(static_cast<std::uint64_t>(want));
      ASSERT_GE(size, bytes);
      ASSERT_EQ(sw.getSize(a), size);
      ASSERT_EQ(obs.getSize(b), size);
      ASSERT_EQ(rbs.getSize(c), size);
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(a) % size, 0u) << "aligned to its size";
      // The block is the program's: fill it (the software engine's links
      // live in free blocks only, so this must not disturb its lists).
      std::memset(a, 0xA5, size);
      live.push_back(static_cast<std::uint64_t>(want));
    } else if (pick < 95) {
      const std::size_t k = rng() % live.size();
      const std::uint64_t off = live[k];
      live[k] = live.back();
      live.pop_back();
      ASSERT_EQ(ref.free(off), BuddyCore<>::FreeResult::Ok);
      ASSERT_TRUE(sw.tryFree(sw.base() + off)) << "op " << i;
      ASSERT_TRUE(obs.tryFree(obs.base() + off)) << "op " << i;
      ASSERT_TRUE(rbs.tryFree(rbs.base() + off)) << "op " << i;
    } else {
      // An interior pointer (not a block's start), a pointer outside.
      const std::uint64_t off = live[rng() % live.size()];
      if (ref.blockSize(off) > 16) {
        const std::uint64_t bad = off + 16;
        ASSERT_EQ(ref.free(bad), BuddyCore<>::FreeResult::Invalid);
        ASSERT_FALSE(sw.tryFree(sw.base() + bad)) << "op " << i;
        ASSERT_FALSE(obs.tryFree(obs.base() + bad)) << "op " << i;
        ASSERT_FALSE(rbs.tryFree(rbs.base() + bad)) << "op " << i;
        ++invalid;
      }
      int outside = 0;
      ASSERT_FALSE(sw.tryFree(&outside));
      ASSERT_FALSE(obs.tryFree(&outside));
      ASSERT_FALSE(rbs.tryFree(&outside));
    }
    if (i % 5000 == 0) {
      ASSERT_EQ(sw.engine().core().check(), "") << "op " << i;
      ASSERT_EQ(sw.freeBytes(), ref.freeBytes());
      ASSERT_EQ(obs.freeBytes(), ref.freeBytes());
      ASSERT_EQ(rbs.freeBytes(), ref.freeBytes());
    }
  }
  // Double frees, now that the lists are busy: free a block, then again.
  ASSERT_FALSE(live.empty());
  const std::uint64_t off = live.back();
  ASSERT_TRUE(sw.tryFree(sw.base() + off));
  ASSERT_TRUE(obs.tryFree(obs.base() + off));
  ASSERT_TRUE(rbs.tryFree(rbs.base() + off));
  EXPECT_FALSE(sw.tryFree(sw.base() + off)) << "double free";
  EXPECT_FALSE(obs.tryFree(obs.base() + off)) << "double free";
  EXPECT_FALSE(rbs.tryFree(rbs.base() + off)) << "double free";
  EXPECT_GT(ooms, 0);
  EXPECT_GT(invalid, 0);

  // The cycles each engine counted in the RTL: OBS finds in one cycle and
  // answers an allocation in two; RBS scans a list per cycle.
  const auto &o = obs.engine().stats();
  const auto &r = rbs.engine().stats();
  EXPECT_EQ(o.find.min, 1u);
  EXPECT_EQ(o.find.max, 1u);
  EXPECT_EQ(o.alloc.max, 2u);
  EXPECT_GE(r.find.max, 2u);
  EXPECT_LE(r.find.max, 22u - 4u + 1u) << "at most every list of a 4 MiB heap";
  EXPECT_GT(r.alloc.mean(), o.alloc.mean());
  EXPECT_EQ(o.alloc.n, r.alloc.n);
  EXPECT_EQ(o.out_of_memory, static_cast<std::uint64_t>(ooms));
  EXPECT_GT(o.invalid_frees, 0u);
  EXPECT_GT(o.block.max, 0u) << "OBS split after answering";
  EXPECT_EQ(r.block.n, 0u) << "RBS answers when all is done";
  std::printf("OBS find %llu..%llu alloc %.2f mean %llu max; RBS find %llu..%llu alloc %.2f mean "
              "%llu max\n",
              static_cast<unsigned long long>(o.find.min), static_cast<unsigned long long>(o.find.max),
              o.alloc.mean(), static_cast<unsigned long long>(o.alloc.max),
              static_cast<unsigned long long>(r.find.min), static_cast<unsigned long long>(r.find.max),
              r.alloc.mean(), static_cast<unsigned long long>(r.alloc.max));
}

// Exhaustion: a 64 KiB heap holds exactly 4096 smallest blocks; then NULL,
// and after everything is freed the whole heap is one block again.
TEST(BuddyHeapLayer, ExhaustionGivesNullAndFreeingRestoresTheRoot) {
  BuddyHeap<SoftwareBuddy> sw;
  BuddyHeap<Obs> obs;
  ASSERT_TRUE(sw.init(1 << 16));
  ASSERT_TRUE(obs.init(1 << 16));
  std::vector<void *> a, b;
  for (;;) {
    void *p = sw.malloc(1), *q = obs.malloc(1);
    ASSERT_EQ(p == nullptr, q == nullptr);
    if (!p)
      break;
    a.push_back(p);
    b.push_back(q);
  }
  EXPECT_EQ(a.size(), 4096u);
  EXPECT_EQ(sw.malloc(16), nullptr);
  EXPECT_EQ(obs.mallocAligned(16, 4096), nullptr);
  for (void *p : a)
    ASSERT_TRUE(sw.tryFree(p));
  for (void *q : b)
    ASSERT_TRUE(obs.tryFree(q));
  EXPECT_EQ(sw.malloc(1 << 16), sw.base());
  EXPECT_EQ(obs.malloc(1 << 16), obs.base());
  EXPECT_EQ(sw.malloc(1), nullptr);
  EXPECT_EQ(sw.malloc((1 << 16) + 1), nullptr);
}

TEST(BuddyHeapLayer, AlignedRequestsAreAlignedToTheirAlignment) {
  BuddyHeap<Obs> obs;
  ASSERT_TRUE(obs.init(1 << 20));
  for (std::size_t align : {32u, 64u, 4096u, 65536u}) {
    void *p = obs.malloc(24); // leave odd blocks about
    void *q = obs.mallocAligned(100, align);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(q) % align, 0u) << align;
    EXPECT_GE(obs.getSize(q), align);
    ASSERT_TRUE(obs.tryFree(p));
  }
}

} // namespace
