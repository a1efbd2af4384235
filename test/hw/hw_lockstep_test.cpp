// RBS and OBS, Verilated, against the software buddy system (BuddyCore),
// operation by operation: the same addresses, the same out-of-memory
// points, the same invalid frees, the same empty flags; and the cycle
// bounds the paper claims, provoked on purpose.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "Vbuddy_obs_h20.h"
#include "Vbuddy_obs_h8.h"
#include "Vbuddy_rbs_h20.h"
#include "Vbuddy_rbs_h8.h"
#include "Vbuddy_obs_rt.h"
#include "Vbuddy_rbs_rt.h"
#include "buddy_sim.h"
#include "defero/buddy/buddy_core.h"

namespace {

using defero::buddy::BuddyCore;
using defero::hw::BuddySim;
using defero::hw::HostRam;
using defero::hw::OpResult;
using defero::hw::Status;

struct Stat {
  std::uint64_t n = 0, sum = 0, min = ~std::uint64_t{0}, max = 0;
  void add(std::uint64_t v) {
    ++n;
    sum += v;
    min = std::min(min, v);
    max = std::max(max, v);
  }
  std::string str() const {
    char b[96];
    std::snprintf(b, sizeof b, "min %llu / mean %.2f / max %llu",
                  static_cast<unsigned long long>(min), n ? double(sum) / double(n) : 0.0,
                  static_cast<unsigned long long>(max));
    return b;
  }
};

/// The expected outcome of an operation, from the software model.
OpResult expectAlloc(BuddyCore<> &sw, std::uint64_t bytes) {
  OpResult r;
  const std::int64_t a = sw.alloc(bytes);
  r.status = a < 0 ? Status::OutOfMemory : Status::Ok;
  r.addr = a < 0 ? 0 : static_cast<std::uint64_t>(a);
  return r;
}
OpResult expectFree(BuddyCore<> &sw, std::uint64_t off) {
  OpResult r;
  r.status = sw.free(off) == BuddyCore<>::FreeResult::Ok ? Status::Ok : Status::InvalidFree;
  return r;
}

std::uint64_t swEmptyFlags(BuddyCore<> &sw) {
  std::uint64_t f = 0;
  for (unsigned l = 0; l < sw.levels(); ++l)
    if (sw.listEmpty(l))
      f |= std::uint64_t{1} << l;
  return f;
}

/// Removes a random element of `live` and returns it.
std::uint64_t takeRandom(std::vector<std::uint64_t> &live, std::mt19937_64 &rng) {
  const std::size_t k = rng() % live.size();
  const std::uint64_t off = live[k];
  live[k] = live.back();
  live.pop_back();
  return off;
}

long opsFromEnv(long fallback) {
  const char *e = std::getenv("DEFERO_HW_OPS");
  return e ? std::atol(e) : fallback;
}

TEST(HwLockstep, RbsObsAndSoftwareAgreeOnAMillionRandomOperations) {
  const long ops = opsFromEnv(1000000);
  BuddySim<Vbuddy_rbs_h20> rbs(20);
  BuddySim<Vbuddy_obs_h20> obs(20);
  BuddyCore<> sw(1u << 20, 16);
  std::mt19937_64 rng(5);
  std::vector<std::uint64_t> live;
  Stat rbs_find, obs_find, rbs_alloc, obs_alloc, rbs_free, obs_free;
  long ooms = 0, invalid = 0;
  for (long i = 0; i < ops; ++i) {
    const unsigned pick = static_cast<unsigned>(rng() % 100);
    OpResult want, r, o;
    if (live.empty() || pick < 52) {
      // Small requests mostly, large ones now and then, some too large.
      const std::uint64_t bytes = pick % 13 == 0 ? rng() % (1u << 19)
                                : pick == 51   ? (1u << 20) + 1
                                               : rng() % 600;
      want = expectAlloc(sw, bytes);
      r = rbs.alloc(bytes);
      o = obs.alloc(bytes);
      if (want.status == Status::Ok) {
        live.push_back(want.addr);
        rbs_alloc.add(r.latency);
        obs_alloc.add(o.latency);
        rbs_find.add(r.find);
        obs_find.add(o.find);
      } else {
        ++ooms;
      }
    } else if (pick < 97) {
      const std::uint64_t off = takeRandom(live, rng);
      want = expectFree(sw, off);
      r = rbs.free(off);
      o = obs.free(off);
      rbs_free.add(r.latency);
      obs_free.add(o.latency);
    } else {
      // Invalid frees: a freed block again, inside a block, misaligned,
      // outside the heap.
      const std::uint64_t bad[] = {live[rng() % live.size()] + 16, 1u << 21,
                                   live[rng() % live.size()] + 8};
      const std::uint64_t off = bad[rng() % 3];
      want = expectFree(sw, off);
      r = rbs.free(off);
      o = obs.free(off);
      if (want.status == Status::Ok) // it was a block after all
        live.erase(std::find(live.begin(), live.end(), off));
      else
        ++invalid;
    }
    ASSERT_EQ(static_cast<int>(r.status), static_cast<int>(want.status)) << "RBS, op " << i;
    ASSERT_EQ(static_cast<int>(o.status), static_cast<int>(want.status)) << "OBS, op " << i;
    ASSERT_EQ(r.addr, want.addr) << "RBS, op " << i;
    ASSERT_EQ(o.addr, want.addr) << "OBS, op " << i;
    if (i % 1024 == 0) {
      obs.settle();
      ASSERT_EQ(rbs.emptyFlags(), swEmptyFlags(sw)) << "op " << i;
      ASSERT_EQ(obs.emptyFlags(), swEmptyFlags(sw)) << "op " << i;
    }
    if (i % 100000 == 0) {
      ASSERT_EQ(sw.check(), "") << "op " << i;
    }
  }
  EXPECT_GT(ooms, 0) << "the run reached out of memory";
  EXPECT_GT(invalid, 0);
  // OBS finds in constant time; RBS does not.
  EXPECT_EQ(obs_find.min, obs_find.max);
  EXPECT_GT(rbs_find.max, rbs_find.min);
  std::printf("ops %ld (out of memory %ld, invalid frees %ld), heap 1 MiB, 16-byte blocks, RAM latency 1\n",
              ops, ooms, invalid);
  std::printf("RBS find  cycles: %s\nOBS find  cycles: %s\n", rbs_find.str().c_str(),
              obs_find.str().c_str());
  std::printf("RBS alloc cycles: %s\nOBS alloc cycles: %s\n", rbs_alloc.str().c_str(),
              obs_alloc.str().c_str());
  std::printf("RBS free  cycles: %s\nOBS free  cycles: %s\n", rbs_free.str().c_str(),
              obs_free.str().c_str());
  RecordProperty("rbs_find", rbs_find.str());
  RecordProperty("obs_find", obs_find.str());
  RecordProperty("rbs_alloc", rbs_alloc.str());
  RecordProperty("obs_alloc", obs_alloc.str());
}

// The worst cases, provoked: the smallest request when only the root block
// is free (every list scanned by RBS, every level split), the free that
// merges all the way back to the root, and a request arriving while OBS is
// still splitting after its Fast-Return.
TEST(HwLockstep, WorstCasesAreBoundedAsThePaperSays) {
  BuddySim<Vbuddy_rbs_h20> rbs(20);
  BuddySim<Vbuddy_obs_h20> obs(20);
  const unsigned levels = 20 - 4 + 1;

  const OpResult r = rbs.alloc(1), o = obs.alloc(1);
  ASSERT_EQ(r.addr, 0u);
  ASSERT_EQ(o.addr, 0u);
  EXPECT_EQ(r.find, levels) << "RBS looked at every list";
  EXPECT_EQ(o.find, 1u) << "OBS: one cycle whatever the state";
  EXPECT_LT(o.latency, r.latency) << "Fast-Return answers before the splitting";
  EXPECT_FALSE(obs.ready()) << "OBS is still splitting (Block time)";

  // Back to back: the next request waits through the handshake and gets
  // the block the model says.
  const OpResult o2 = obs.alloc(1);
  const OpResult r2 = rbs.alloc(1);
  EXPECT_GT(o2.wait, 0u) << "the request arrived during the Block time";
  EXPECT_EQ(o2.addr, 16u);
  EXPECT_EQ(r2.addr, 16u);

  // Free both: the second merges up to the root.
  EXPECT_EQ(obs.free(16).status, Status::Ok);
  EXPECT_EQ(rbs.free(16).status, Status::Ok);
  const OpResult of = obs.free(0), rf = rbs.free(0);
  EXPECT_EQ(of.status, Status::Ok);
  EXPECT_EQ(rf.status, Status::Ok);
  EXPECT_EQ(obs.emptyFlags(), (std::uint64_t{1} << levels) - 1 - (std::uint64_t{1} << (levels - 1)))
      << "only the root list holds a block";
  std::printf("worst cases: RBS find %u alloc %llu; OBS find %u alloc %llu (+%llu Block), "
              "full-cascade free RBS %llu OBS %llu cycles\n",
              r.find, static_cast<unsigned long long>(r.latency), o.find,
              static_cast<unsigned long long>(o.latency),
              static_cast<unsigned long long>(o2.wait),
              static_cast<unsigned long long>(rf.latency),
              static_cast<unsigned long long>(of.latency));

  // Exhaustion gives out of memory; an invalid free is reported.
  EXPECT_EQ(rbs.alloc(1u << 20).status, Status::Ok);
  EXPECT_EQ(rbs.alloc(1).status, Status::OutOfMemory);
  EXPECT_EQ(rbs.free(0).status, Status::Ok);
  EXPECT_EQ(rbs.free(0).status, Status::InvalidFree) << "double free";
  EXPECT_EQ(obs.free(48).status, Status::InvalidFree) << "never allocated";
}

// Every sequence of up to kDepth operations on a heap of 16 smallest blocks
// (RAM latency 2), each replayed on fresh RBS, OBS and software models.
TEST(HwLockstep, EverySequenceOnATinyHeap) {
  constexpr int kDepth = 4;
  struct Op {
    bool alloc;
    std::uint64_t arg;
  };
  long sequences = 0;
  std::vector<Op> seq;
  auto replay = [&](std::vector<std::uint64_t> &live) {
    BuddySim<Vbuddy_rbs_h8> rbs(8);
    BuddySim<Vbuddy_obs_h8> obs(8);
    BuddyCore<> sw(256, 16);
    live.clear();
    for (const Op &op : seq) {
      OpResult want, r, o;
      if (op.alloc) {
        want = expectAlloc(sw, op.arg);
        r = rbs.alloc(op.arg);
        o = obs.alloc(op.arg);
        if (want.status == Status::Ok)
          live.push_back(want.addr);
      } else {
        const std::uint64_t off = live[op.arg];
        live.erase(live.begin() + static_cast<long>(op.arg));
        want = expectFree(sw, off);
        r = rbs.free(off);
        o = obs.free(off);
      }
      if (r.status != want.status || o.status != want.status || r.addr != want.addr ||
          o.addr != want.addr)
        return false;
      obs.settle();
      if (rbs.emptyFlags() != swEmptyFlags(sw) || obs.emptyFlags() != swEmptyFlags(sw) ||
          !sw.check().empty())
        return false;
    }
    return true;
  };
  std::function<void()> explore = [&] {
    std::vector<std::uint64_t> live;
    ++sequences;
    ASSERT_TRUE(replay(live)) << "sequence " << sequences << " of length " << seq.size();
    if (static_cast<int>(seq.size()) == kDepth)
      return;
    for (std::uint64_t bytes : {1u, 16u, 17u, 32u, 64u, 100u, 128u, 256u, 257u}) {
      seq.push_back({true, bytes});
      explore();
      seq.pop_back();
      if (HasFatalFailure())
        return;
    }
    for (std::uint64_t i = 0; i < live.size(); ++i) {
      seq.push_back({false, i});
      explore();
      seq.pop_back();
      if (HasFatalFailure())
        return;
    }
  };
  explore();
  EXPECT_GT(sequences, 5000);
  std::printf("sequences replayed: %ld\n", sequences);
}

/// The hardware's own state, read from its header RAM (host RAM models),
/// against the software model: every free block's tag (free, its level)
/// and links (next, prev: the same lists in the same order), every
/// allocated block's tag (busy, its level), and no header anywhere else.
/// Empty string when all match, else the first difference.
std::string ramMatches(HostRam &ram, BuddyCore<> &sw, const std::vector<std::uint64_t> &live) {
  const std::uint64_t units = sw.heapBytes() / 16;
  std::vector<std::uint32_t> want(units * 3, 0); // tag, next, prev per unit
  std::vector<bool> linked(units, false);
  for (unsigned l = 0; l < sw.levels(); ++l) {
    const std::vector<std::uint64_t> list = sw.freeList(l);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::uint64_t u = list[i] / 16;
      want[u * 3] = 0x80u | l;
      want[u * 3 + 1] = i + 1 < list.size() ? static_cast<std::uint32_t>(list[i + 1] / 16) : 0xffffffffu;
      want[u * 3 + 2] = i > 0 ? static_cast<std::uint32_t>(list[i - 1] / 16) : 0xffffffffu;
      linked[u] = true;
    }
  }
  for (std::uint64_t off : live)
    want[off / 16 * 3] = 0x40u | defero::buddy::log2Exact(sw.blockSize(off) / 16);
  const std::uint32_t *w = ram.data();
  for (std::uint64_t u = 0; u < units; ++u) {
    if (w[u * 4] != want[u * 3])
      return "unit " + std::to_string(u) + ": tag " + std::to_string(w[u * 4]) + ", want " +
             std::to_string(want[u * 3]);
    if (linked[u] && (w[u * 4 + 1] != want[u * 3 + 1] || w[u * 4 + 2] != want[u * 3 + 2]))
      return "unit " + std::to_string(u) + ": links differ from the software lists";
  }
  return {};
}

// The runtime's models (header RAM in the host, heap size chosen at run
// time through heap_log_i, up to the build's DEFERO_HEAP_BYTES) follow the
// same policy at each size a run may choose: the smallest heap, and 1 MiB
// and 64 MiB heaps; their header RAM holds exactly the software model's
// blocks and lists (after every operation on the smallest heap). RBS's worst find is one cycle per list of the heap
// chosen (it grows with log2 of the heap size); OBS's stays one cycle.
TEST(HwLockstep, RuntimeModelsAgreeAtTheHeapSizeARunChooses) {
  const unsigned max_log = DEFERO_TEST_HEAP_LOG;
  for (unsigned heap_log : {16u, 20u, 26u}) {
    if (heap_log > max_log)
      continue;
    SCOPED_TRACE("heap 2^" + std::to_string(heap_log));
    HostRam rbs_ram, obs_ram;
    ASSERT_TRUE(rbs_ram.reset(std::uint64_t{4} << (heap_log - 4)));
    ASSERT_TRUE(obs_ram.reset(std::uint64_t{4} << (heap_log - 4)));
    BuddySim<Vbuddy_rbs_rt> rbs(heap_log, &rbs_ram);
    BuddySim<Vbuddy_obs_rt> obs(heap_log, &obs_ram);
    BuddyCore<> sw(std::uint64_t{1} << heap_log, 16);

    // The worst find first: the smallest request with only the root free.
    const OpResult r0 = rbs.alloc(1), o0 = obs.alloc(1);
    ASSERT_EQ(r0.status, Status::Ok);
    ASSERT_EQ(o0.addr, 0u);
    ASSERT_EQ(sw.alloc(1), 0);
    EXPECT_EQ(r0.find, heap_log - 4 + 1) << "RBS looked at every list of this heap";
    EXPECT_EQ(o0.find, 1u);
    // Beyond this heap: out of memory, and a free there is invalid.
    EXPECT_EQ(rbs.alloc((std::uint64_t{1} << heap_log) + 1).status, Status::OutOfMemory);
    EXPECT_EQ(obs.alloc(std::uint64_t{1} << heap_log).status, Status::OutOfMemory);
    EXPECT_EQ(obs.free(std::uint64_t{1} << heap_log).status, Status::InvalidFree);
    EXPECT_EQ(rbs.free(std::uint64_t{1} << heap_log).status, Status::InvalidFree);

    std::mt19937_64 rng(heap_log);
    std::vector<std::uint64_t> live{0};
    long ooms = 0;
    for (long i = 0; i < 60000; ++i) {
      OpResult want, r, o;
      if (live.empty() || rng() % 100 < 55) {
        const std::uint64_t bytes =
            rng() % 16 == 0 ? rng() % (std::uint64_t{1} << (heap_log - 2)) : rng() % 700;
        want = expectAlloc(sw, bytes);
        r = rbs.alloc(bytes);
        o = obs.alloc(bytes);
        EXPECT_EQ(o.find, 1u) << "OBS finds in one cycle, op " << i;
        if (want.status == Status::Ok)
          live.push_back(want.addr);
        else
          ++ooms;
      } else {
        const std::uint64_t off = takeRandom(live, rng);
        want = expectFree(sw, off);
        r = rbs.free(off);
        o = obs.free(off);
      }
      ASSERT_EQ(static_cast<int>(r.status), static_cast<int>(want.status)) << "RBS, op " << i;
      ASSERT_EQ(static_cast<int>(o.status), static_cast<int>(want.status)) << "OBS, op " << i;
      ASSERT_EQ(r.addr, want.addr) << "RBS, op " << i;
      ASSERT_EQ(o.addr, want.addr) << "OBS, op " << i;
      // The hardware's own header RAM: after every operation on the
      // smallest heap (4096 blocks), now and then on the larger ones.
      // With the software model's invariants (no overlap, alignment, no
      // uncoalesced buddies, free bytes conserved) and the empty flags.
      if (heap_log == 16 || i % 4096 == 0) {
        obs.settle();
        ASSERT_EQ(ramMatches(rbs_ram, sw, live), "") << "RBS, op " << i;
        ASSERT_EQ(ramMatches(obs_ram, sw, live), "") << "OBS, op " << i;
        ASSERT_EQ(sw.check(), "") << "op " << i;
        const std::uint64_t mask = (std::uint64_t{1} << sw.levels()) - 1;
        ASSERT_EQ(rbs.emptyFlags() & mask, swEmptyFlags(sw)) << "op " << i;
        ASSERT_EQ(obs.emptyFlags() & mask, swEmptyFlags(sw)) << "op " << i;
      }
      if (i % 4096 == 0) {
        // The lists above this heap's root exist in the RTL, always empty.
        const std::uint64_t above = ~std::uint64_t{0} << sw.levels();
        obs.settle();
        ASSERT_EQ(rbs.emptyFlags() | above, swEmptyFlags(sw) | above) << "op " << i;
        ASSERT_EQ(obs.emptyFlags() | above, swEmptyFlags(sw) | above) << "op " << i;
        ASSERT_EQ(obs.emptyFlags() & above, ((std::uint64_t{1} << (max_log - 4 + 1)) - 1) & above);
      }
    }
    ASSERT_EQ(sw.check(), "");
    // The comparison sees a header the hardware did not write.
    obs.settle();
    const std::uint32_t saved = obs_ram.data()[4];
    obs_ram.data()[4] ^= 0x40u;
    EXPECT_NE(ramMatches(obs_ram, sw, live), "");
    obs_ram.data()[4] = saved;
    if (heap_log <= 20) {
      EXPECT_GT(ooms, 0) << "the small heaps ran out of memory";
    }
  }
}

} // namespace
