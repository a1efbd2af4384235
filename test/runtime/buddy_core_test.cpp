// The software buddy system of buddy_core.h: the policy hw/'s RBS and OBS
// must follow, checked against the paper's example, invariants after every
// operation of long random runs, invalid frees, and every sequence of
// operations up to a depth on a heap of 16 smallest blocks.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "defero/buddy/buddy_core.h"

namespace {

using defero::buddy::BuddyCore;
using Free = BuddyCore<>::FreeResult;

TEST(BuddyCore, RejectsSizesThatAreNotPowersOfTwoOrTooSmall) {
  EXPECT_FALSE((BuddyCore<>::validSizes(1000, 16)));
  EXPECT_FALSE((BuddyCore<>::validSizes(1024, 24)));
  EXPECT_FALSE((BuddyCore<>::validSizes(1024, 8)));   // no room for a free block's links
  EXPECT_FALSE((BuddyCore<>::validSizes(16, 32)));
  EXPECT_FALSE((BuddyCore<>::validSizes(0, 16)));
  EXPECT_TRUE((BuddyCore<>::validSizes(16, 16)));
  BuddyCore<> bad(1000, 16);
  EXPECT_FALSE(bad.valid());
  EXPECT_EQ(bad.alloc(16), -1);
  EXPECT_EQ(bad.free(0), Free::Invalid);
}

// Fig. 10 of Donahue et al.: a 256-byte heap; a 16-byte request splits it
// down to two 16-byte blocks; the lower one is returned.
TEST(BuddyCore, SplitsAsInThePaperAndCoalescesBack) {
  BuddyCore<> b(256, 16);
  ASSERT_TRUE(b.valid());
  EXPECT_EQ(b.levels(), 5u);
  EXPECT_EQ(b.alloc(16), 0);
  EXPECT_EQ(b.lastSteps().lists_scanned, 5u); // RBS looked at lists 0..4
  EXPECT_EQ(b.lastSteps().splits, 4u);
  EXPECT_EQ(b.freeList(0), std::vector<std::uint64_t>{16});
  EXPECT_EQ(b.freeList(1), std::vector<std::uint64_t>{32});
  EXPECT_EQ(b.freeList(2), std::vector<std::uint64_t>{64});
  EXPECT_EQ(b.freeList(3), std::vector<std::uint64_t>{128});
  EXPECT_TRUE(b.listEmpty(4));
  EXPECT_EQ(b.alloc(10), 16); // served at once from list 0
  EXPECT_EQ(b.lastSteps().lists_scanned, 1u);
  EXPECT_EQ(b.alloc(33), 64); // 64 bytes: list 2
  EXPECT_EQ(b.blockSize(64), 64u);
  EXPECT_EQ(b.check(), "");
  EXPECT_EQ(b.free(16), Free::Ok);
  EXPECT_EQ(b.free(0), Free::Ok);
  EXPECT_EQ(b.lastSteps().merges, 2u); // 0+16 -> 32, +32 -> 64 (64 is busy)
  EXPECT_EQ(b.free(64), Free::Ok);
  EXPECT_EQ(b.lastSteps().merges, 2u);
  EXPECT_EQ(b.freeList(4), std::vector<std::uint64_t>{0});
  EXPECT_EQ(b.freeBytes(), 256u);
  EXPECT_EQ(b.check(), "");
}

TEST(BuddyCore, ListsAreLifoAndSplitHalvesGoToTheirHeads) {
  BuddyCore<> b(1024, 16);
  std::vector<std::int64_t> got;
  for (int i = 0; i < 4; ++i)
    got.push_back(b.alloc(16));
  EXPECT_EQ(got, (std::vector<std::int64_t>{0, 16, 32, 48}));
  ASSERT_EQ(b.free(16), Free::Ok); // 16's buddy 0 is busy: stays at level 0
  ASSERT_EQ(b.free(48), Free::Ok); // likewise
  EXPECT_EQ(b.freeList(0), (std::vector<std::uint64_t>{48, 16}));
  EXPECT_EQ(b.alloc(1), 48); // the head: the last freed
  EXPECT_EQ(b.check(), "");
}

TEST(BuddyCore, OutOfMemoryIsMinusOneAndChangesNothing) {
  BuddyCore<> b(256, 16);
  EXPECT_EQ(b.alloc(257), -1);
  EXPECT_EQ(b.alloc(1u << 30), -1);
  EXPECT_EQ(b.alloc(256), 0);
  EXPECT_EQ(b.alloc(1), -1);
  EXPECT_EQ(b.freeBytes(), 0u);
  EXPECT_EQ(b.check(), "");
  EXPECT_EQ(b.alloc(0), -1);
  ASSERT_EQ(b.free(0), Free::Ok);
  EXPECT_EQ(b.alloc(0), 0) << "a 0-byte request takes a smallest block";
  EXPECT_EQ(b.blockSize(0), 16u);
}

TEST(BuddyCore, InvalidFreesAreRefusedAndChangeNothing) {
  BuddyCore<> b(4096, 16);
  const std::int64_t a = b.alloc(64), c = b.alloc(16);
  ASSERT_GE(a, 0);
  ASSERT_GE(c, 0);
  const std::uint64_t before = b.freeBytes();
  const std::uint64_t bad[] = {static_cast<std::uint64_t>(a) + 16, // inside a block
                               static_cast<std::uint64_t>(a) + 1,  // misaligned
                               4096, 1u << 20,                     // outside the heap
                               2048};                              // a free block
  for (std::uint64_t off : bad) {
    EXPECT_EQ(b.free(off), Free::Invalid) << off;
    EXPECT_EQ(b.freeBytes(), before) << off;
    EXPECT_EQ(b.check(), "") << off;
  }
  EXPECT_EQ(b.free(static_cast<std::uint64_t>(c)), Free::Ok);
  EXPECT_EQ(b.free(static_cast<std::uint64_t>(c)), Free::Invalid) << "double free";
  EXPECT_EQ(b.free(static_cast<std::uint64_t>(a)), Free::Ok);
  EXPECT_EQ(b.freeBytes(), 4096u);
}

/// What the test knows independently of the allocator: the live blocks.
struct Live {
  std::map<std::uint64_t, std::uint64_t> blocks; // offset -> size

  ::testing::AssertionResult admit(std::uint64_t off, std::uint64_t size) {
    if (off % size)
      return ::testing::AssertionFailure() << off << " not aligned to " << size;
    auto next = blocks.lower_bound(off);
    if (next != blocks.end() && next->first < off + size)
      return ::testing::AssertionFailure() << off << " overlaps " << next->first;
    if (next != blocks.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second > off)
        return ::testing::AssertionFailure() << off << " overlaps " << prev->first;
    }
    blocks[off] = size;
    return ::testing::AssertionSuccess();
  }
};

/// Out of memory exactly when no list at the request's level or above
/// holds a block.
bool noRoomFor(BuddyCore<> &b, std::uint64_t bytes) {
  for (unsigned l = b.levelFor(bytes); l < b.levels(); ++l)
    if (!b.listEmpty(l))
      return false;
  return true;
}

TEST(BuddyCore, RandomOperationsKeepEveryInvariant) {
  BuddyCore<> b(1u << 20, 16);
  Live live;
  std::mt19937_64 rng(20261122);
  std::vector<std::uint64_t> order;
  std::uint64_t live_bytes = 0;
  for (int i = 0; i < 200000; ++i) {
    const bool do_alloc = order.empty() || rng() % 100 < 55;
    if (do_alloc) {
      // Mostly small, sometimes large requests.
      const std::uint64_t bytes = rng() % 8 ? 1 + rng() % 512 : 1 + rng() % (1u << 16);
      const bool full = noRoomFor(b, bytes);
      const std::int64_t off = b.alloc(bytes);
      ASSERT_EQ(off < 0, full) << "op " << i;
      if (off < 0)
        continue;
      const std::uint64_t size = b.blockSize(static_cast<std::uint64_t>(off));
      ASSERT_GE(size, bytes);
      ASSERT_LT(size / 2, bytes < 16 ? 16 : bytes) << "the smallest block that fits";
      ASSERT_TRUE(live.admit(static_cast<std::uint64_t>(off), size)) << "op " << i;
      order.push_back(static_cast<std::uint64_t>(off));
      live_bytes += size;
    } else {
      const std::size_t k = rng() % order.size();
      const std::uint64_t off = order[k];
      order[k] = order.back();
      order.pop_back();
      live_bytes -= live.blocks[off];
      live.blocks.erase(off);
      ASSERT_EQ(b.free(off), Free::Ok) << "op " << i;
    }
    ASSERT_EQ(b.freeBytes() + live_bytes, b.heapBytes()) << "free bytes conserved, op " << i;
    if (i % 2000 == 0) {
      ASSERT_EQ(b.check(), "") << "op " << i;
    }
  }
  for (std::uint64_t off : order)
    ASSERT_EQ(b.free(off), Free::Ok);
  EXPECT_EQ(b.check(), "");
  EXPECT_EQ(b.freeList(b.levels() - 1), std::vector<std::uint64_t>{0})
      << "everything coalesces back into the whole heap";
}

/// Every sequence of up to kDepth operations (an allocation at each level,
/// or the free of each live block) on a heap of 16 smallest blocks, each
/// replayed from the initial state: invariants after every operation.
class Exhaustive {
public:
  static constexpr int kDepth = 6;
  long sequences = 0;

  void run() {
    std::vector<Op> seq;
    explore(seq);
  }

private:
  struct Op {
    bool alloc;
    std::uint64_t arg; // bytes to allocate, or index of the live block to free
  };

  BuddyCore<> b_;

  // Replays seq; false (with a failure recorded) if something broke.
  bool replay(const std::vector<Op> &seq, std::vector<std::uint64_t> &live_out) {
    b_.init(256, 16);
    Live live;
    std::vector<std::uint64_t> order;
    for (const Op &op : seq) {
      if (op.alloc) {
        const bool full = noRoomFor(b_, op.arg);
        const std::int64_t off = b_.alloc(op.arg);
        EXPECT_EQ(off < 0, full);
        if (off >= 0) {
          EXPECT_TRUE(live.admit(static_cast<std::uint64_t>(off),
                                 b_.blockSize(static_cast<std::uint64_t>(off))));
          order.push_back(static_cast<std::uint64_t>(off));
        }
      } else {
        const std::uint64_t off = order[op.arg];
        order.erase(order.begin() + static_cast<long>(op.arg));
        live.blocks.erase(off);
        EXPECT_EQ(b_.free(off), Free::Ok);
        EXPECT_EQ(b_.free(off), Free::Invalid) << "double free";
      }
      const std::string why = b_.check();
      EXPECT_EQ(why, "");
      if (!why.empty() || ::testing::Test::HasFailure())
        return false;
    }
    live_out = order;
    return true;
  }

  void explore(std::vector<Op> &seq) {
    std::vector<std::uint64_t> live;
    ++sequences;
    if (!replay(seq, live) || static_cast<int>(seq.size()) == kDepth)
      return;
    for (std::uint64_t bytes : {16u, 32u, 64u, 128u, 256u}) {
      seq.push_back({true, bytes});
      explore(seq);
      seq.pop_back();
      if (::testing::Test::HasFailure())
        return;
    }
    for (std::uint64_t i = 0; i < live.size(); ++i) {
      seq.push_back({false, i});
      explore(seq);
      seq.pop_back();
      if (::testing::Test::HasFailure())
        return;
    }
  }
};

TEST(BuddyCore, EverySequenceOnATinyHeapKeepsEveryInvariant) {
  Exhaustive e;
  e.run();
  EXPECT_GT(e.sequences, 10000);
  RecordProperty("sequences", std::to_string(e.sequences));
}

} // namespace
