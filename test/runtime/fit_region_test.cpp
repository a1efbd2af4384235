// fit_region_test.cpp - BasicFitRegion (heaplayers/top/fit_region.h) as
// FitRegion (4 KiB pages) and as MidHeap's region (256-byte units in a
// range it adopts): address-ordered best fit with coalescing over whole
// units, and free runs' memory given back after a delay.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include <sys/mman.h>

#include "defero/heaplayers/top/fit_region.h"

namespace {

using defero::FitRegion;
constexpr std::size_t kPage = FitRegion::kPageBytes;

std::uintptr_t addr(const void *p) { return reinterpret_cast<std::uintptr_t>(p); }

void *take(FitRegion &r, std::size_t pages, bool *fresh_out = nullptr) {
  bool fresh = false;
  void *p = r.take(pages * kPage, fresh);
  if (fresh_out)
    *fresh_out = fresh;
  return p;
}

// Pages of [p, p + bytes) resident now (mincore).
std::size_t residentPages(void *p, std::size_t bytes) {
  std::vector<unsigned char> v(bytes / kPage);
  if (mincore(p, bytes, v.data()) != 0)
    return ~std::size_t{0};
  std::size_t n = 0;
  for (unsigned char c : v)
    n += c & 1;
  return n;
}

TEST(FitRegion, AFreedBlockMergesWithBothNeighboursAndServesALargerRequest) {
  FitRegion r;
  void *a = take(r, 3), *b = take(r, 5), *c = take(r, 2), *guard = take(r, 1);
  ASSERT_TRUE(a && b && c && guard);
  EXPECT_EQ(addr(b), addr(a) + 3 * kPage);
  EXPECT_EQ(addr(c), addr(b) + 5 * kPage);
  ASSERT_TRUE(r.give(a, 3 * kPage, 0));
  ASSERT_TRUE(r.give(c, 2 * kPage, 0));
  ASSERT_TRUE(r.give(b, 5 * kPage, 0)); // merges with a's run and c's
  EXPECT_EQ(r.freeBytes(), 10 * kPage);
  bool fresh = true;
  void *all = take(r, 10, &fresh);
  EXPECT_EQ(all, a) << "the three runs did not merge into one of 10 pages";
  EXPECT_FALSE(fresh) << "reused pages reported as zero-filled";
  EXPECT_EQ(r.freeBytes(), 0u);
}

TEST(FitRegion, ARequestTakesTheSmallestRunThatHoldsItAtItsLowEnd) {
  FitRegion r;
  // Free runs of 10, 6, 8 and 6 pages, each between live blocks.
  const std::size_t sizes[] = {10, 6, 8, 6};
  std::vector<void *> runs, live;
  for (std::size_t pages : sizes) {
    runs.push_back(take(r, pages));
    live.push_back(take(r, 1));
  }
  for (std::size_t i = 0; i < runs.size(); ++i)
    ASSERT_TRUE(r.give(runs[i], sizes[i] * kPage, 0));
  EXPECT_EQ(take(r, 7), runs[2]) << "7 pages: the 8-page run is the best fit";
  EXPECT_EQ(take(r, 6), runs[1]) << "6 pages: the lower of the two exact runs";
  EXPECT_EQ(take(r, 6), runs[3]);
  // The 8-page run's last page is left; a 1-page request takes it (best
  // fit) rather than cutting the 10-page run.
  EXPECT_EQ(addr(take(r, 1)), addr(runs[2]) + 7 * kPage);
  EXPECT_EQ(take(r, 10), runs[0]);
}

TEST(FitRegion, OnlyPagesNeverHandedOutAreFresh) {
  FitRegion r;
  bool fresh = false;
  auto *p = static_cast<unsigned char *>(take(r, 4, &fresh));
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(fresh);
  for (std::size_t i = 0; i < 4 * kPage; ++i)
    ASSERT_EQ(p[i], 0) << "a fresh block's byte " << i;
  std::memset(p, 0xAB, 4 * kPage);
  ASSERT_TRUE(r.give(p, 4 * kPage, 0));
  void *q = take(r, 4, &fresh);
  EXPECT_EQ(q, p);
  EXPECT_FALSE(fresh);
}

/// A block of `pages` written and given back at `now`, a live page above it
/// (so that it stays a run of its own); nullptr if the region failed.
char *writtenAndFreed(FitRegion &r, std::size_t pages, std::uint32_t now) {
  auto *p = static_cast<char *>(take(r, pages));
  if (!p || !take(r, 1))
    return nullptr;
  std::memset(p, 1, pages * kPage);
  return r.give(p, pages * kPage, now) ? p : nullptr;
}

TEST(FitRegion, ARunsMemoryGoesBackAfterTheDelayAndNotBefore) {
  FitRegion r;
  char *p = writtenAndFreed(r, 64, 1000);
  ASSERT_NE(p, nullptr);
  std::uint32_t stamp = 0;
  ASSERT_TRUE(r.oldestResident(stamp));
  EXPECT_EQ(stamp, 1000u);
  r.decay(1099, 100, false);
  EXPECT_EQ(residentPages(p, 64 * kPage), 64u) << "given back before its delay";
  EXPECT_EQ(r.releasedBytes(), 0u);
  r.decay(1100, 100, false);
  EXPECT_EQ(residentPages(p, 64 * kPage), 0u);
  EXPECT_EQ(r.releasedBytes(), 64 * kPage);
  EXPECT_FALSE(r.oldestResident(stamp));
  // A block cut from the released run takes its share back.
  void *q = take(r, 16);
  EXPECT_EQ(q, p);
  EXPECT_EQ(r.releasedBytes(), 48 * kPage);
  EXPECT_EQ(static_cast<char *>(q)[0], 0) << "a released page reads back as zero";
}

// give(..., discard): the block's pages go back at once; merged with a
// resident neighbour, the run counts both, and a later decay gives back
// only the neighbour's.
TEST(FitRegion, AGiveThatDiscardsSendsTheBlocksPagesBackAtOnce) {
  FitRegion r;
  void *a = take(r, 8), *b = take(r, 8), *guard = take(r, 1);
  ASSERT_TRUE(a && b && guard);
  std::memset(a, 1, 8 * kPage);
  std::memset(b, 1, 8 * kPage);
  ASSERT_TRUE(r.give(b, 8 * kPage, 0));
  ASSERT_TRUE(r.give(a, 8 * kPage, 0, true));
  EXPECT_EQ(residentPages(a, 8 * kPage), 0u) << "the discarded block is still resident";
  EXPECT_EQ(residentPages(b, 8 * kPage), 8u) << "its neighbour went back too";
  EXPECT_EQ(r.releasedBytes(), 8 * kPage);
  EXPECT_EQ(r.freeBytes(), 16 * kPage);
  r.decay(0, 0, true);
  EXPECT_EQ(r.releasedBytes(), 16 * kPage);
  EXPECT_EQ(residentPages(b, 8 * kPage), 0u);
  bool fresh = true;
  EXPECT_EQ(take(r, 16, &fresh), a) << "the merged run is one";
  EXPECT_FALSE(fresh);
  EXPECT_EQ(r.releasedBytes(), 0u);
}

TEST(FitRegion, AllGivesBackEveryResidentRunWhateverItsAge) {
  FitRegion r;
  char *p = writtenAndFreed(r, 8, 5000);
  ASSERT_NE(p, nullptr);
  r.decay(5000, 100, true);
  EXPECT_EQ(residentPages(p, 8 * kPage), 0u);
  EXPECT_EQ(r.releasedBytes(), 8 * kPage);
}

TEST(FitRegion, ABlockGrowsInPlaceIntoTheFreeRunAboveItOnly) {
  FitRegion r;
  void *a = take(r, 4), *b = take(r, 6), *c = take(r, 1);
  ASSERT_TRUE(a && b && c);
  EXPECT_FALSE(r.growInPlace(a, 4 * kPage, 5 * kPage)) << "b is live above a";
  ASSERT_TRUE(r.give(b, 6 * kPage, 0));
  EXPECT_FALSE(r.growInPlace(a, 4 * kPage, 11 * kPage)) << "only 6 pages are free above a";
  EXPECT_TRUE(r.growInPlace(a, 4 * kPage, 7 * kPage));
  EXPECT_EQ(r.freeBytes(), 3 * kPage);
  EXPECT_EQ(take(r, 3), static_cast<char *>(a) + 7 * kPage);
}

TEST(FitRegion, TheHighestBlockGrowsIntoPagesNeverHandedOut) {
  FitRegion r;
  auto *a = static_cast<char *>(take(r, 2));
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(r.growInPlace(a, 2 * kPage, 9 * kPage));
  EXPECT_EQ(r.topBytes(), 9 * kPage);
  a[9 * kPage - 1] = 1;
  EXPECT_EQ(take(r, 1), a + 9 * kPage);
  EXPECT_FALSE(r.growInPlace(a, 9 * kPage, (std::size_t{FitRegion::kMaxPages} + 1) * kPage));
}

TEST(FitRegion, RequestsItCannotServeAreRefused) {
  FitRegion r;
  bool fresh = true;
  EXPECT_EQ(r.take(0, fresh), nullptr);
  EXPECT_EQ(r.take(std::size_t{FitRegion::kMaxPages + 1} * kPage, fresh), nullptr);
}

// Random takes, gives and grows against a model of the live blocks: no
// two overlap, every block keeps its contents, and the region's free bytes
// are its high-water mark less what is live.
TEST(FitRegion, RandomTakesAndGivesKeepBlocksApartAndTheAccountsExact) {
  FitRegion r;
  std::mt19937_64 rng(7);
  std::map<std::uintptr_t, std::size_t> live; // address -> pages
  std::size_t live_pages = 0;
  auto check = [&](std::uintptr_t a, std::size_t pages) {
    auto *p = reinterpret_cast<unsigned char *>(a);
    const auto tag = static_cast<unsigned char>(a >> 12);
    return p[0] == tag && p[pages * kPage - 1] == tag;
  };
  for (int step = 0; step < 20000; ++step) {
    const auto op = rng() % 8;
    if (op < 4 || live.empty()) {
      const std::size_t pages = 1 + rng() % (rng() % 4 == 0 ? 300 : 20);
      void *p = take(r, pages);
      ASSERT_NE(p, nullptr);
      const std::uintptr_t a = addr(p);
      auto next = live.lower_bound(a);
      if (next != live.end()) {
        ASSERT_LE(a + pages * kPage, next->first) << "overlaps the block above";
      }
      if (next != live.begin()) {
        auto prev = std::prev(next);
        ASSERT_LE(prev->first + prev->second * kPage, a) << "overlaps the block below";
      }
      static_cast<unsigned char *>(p)[0] = static_cast<unsigned char>(a >> 12);
      static_cast<unsigned char *>(p)[pages * kPage - 1] = static_cast<unsigned char>(a >> 12);
      live[a] = pages;
      live_pages += pages;
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      ASSERT_TRUE(check(it->first, it->second)) << "a live block lost its contents";
      if (op == 7) { // grow by a page or two, in place if it can
        const std::size_t more = 1 + rng() % 2;
        void *p = reinterpret_cast<void *>(it->first);
        if (r.growInPlace(p, it->second * kPage, (it->second + more) * kPage)) {
          auto next = std::next(it);
          if (next != live.end()) {
            ASSERT_LE(it->first + (it->second + more) * kPage, next->first);
          }
          it->second += more;
          live_pages += more;
          static_cast<unsigned char *>(p)[it->second * kPage - 1] =
              static_cast<unsigned char>(it->first >> 12);
        }
        continue;
      }
      ASSERT_TRUE(r.give(reinterpret_cast<void *>(it->first), it->second * kPage,
                         static_cast<std::uint32_t>(step)));
      live_pages -= it->second;
      live.erase(it);
    }
    if (step % 997 == 0)
      r.decay(static_cast<std::uint32_t>(step), 500, false);
    ASSERT_EQ(r.freeBytes() + live_pages * kPage, r.topBytes());
    ASSERT_LE(r.releasedBytes(), r.freeBytes());
  }
  for (auto &[a, pages] : live)
    ASSERT_TRUE(check(a, pages));
}



// --- a region of 256-byte units in a range its user reserved (MidHeap's) ---

using MidRegion = defero::BasicFitRegion<256, 128, false>;
constexpr std::size_t kUnit = MidRegion::kPageBytes;

/// A 16 MiB range for a MidRegion (unmapped when the test ends).
struct Adopted {
  Adopted() {
    base = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                -1, 0);
    ok = base != MAP_FAILED && r.adopt(base, kBytes / kUnit);
  }
  ~Adopted() {
    if (base != MAP_FAILED)
      munmap(base, kBytes);
  }
  static constexpr std::size_t kBytes = std::size_t{16} << 20;
  void *base;
  MidRegion r;
  bool ok = false;
};

TEST(MidRegion, LiveTagsNameABlocksLengthUntilItIsGivenBack) {
  Adopted a;
  ASSERT_TRUE(a.ok);
  EXPECT_FALSE(a.r.adopt(a.base, 16)) << "a region in use adopted a second range";
  bool fresh = false;
  void *p = a.r.take(24 * kUnit, fresh);
  ASSERT_EQ(p, a.base);
  EXPECT_TRUE(fresh);
  a.r.markLive(p, 24 * kUnit);
  EXPECT_EQ(a.r.liveUnits(p), 24u);
  EXPECT_TRUE(a.r.unitStart(p));
  EXPECT_FALSE(a.r.unitStart(static_cast<char *>(p) + 16));
  EXPECT_EQ(a.r.liveUnits(static_cast<char *>(p) + kUnit), 0u) << "inside a block is no block";
  // The caller's bit: set once, seen as set the second time.
  EXPECT_EQ(a.r.orTag(p, MidRegion::kCached) & MidRegion::kCached, 0u);
  EXPECT_NE(a.r.orTag(p, MidRegion::kCached) & MidRegion::kCached, 0u);
  void *guard = a.r.take(kUnit, fresh);
  ASSERT_TRUE(a.r.give(p, 24 * kUnit, 0));
  EXPECT_EQ(a.r.liveUnits(p), 0u) << "a given-back block still has its live tag";
  // Its run merges with nothing live: a request of its length takes it.
  EXPECT_EQ(a.r.take(24 * kUnit, fresh), p);
  (void)guard;
}

TEST(MidRegion, AnExactBinGivesItsNewestRun) {
  Adopted a;
  ASSERT_TRUE(a.ok);
  bool fresh;
  std::vector<void *> b;
  for (int i = 0; i < 6; ++i)
    b.push_back(a.r.take((i % 2 ? 1 : 4) * kUnit, fresh)); // 4-unit blocks apart
  ASSERT_TRUE(a.r.give(b[0], 4 * kUnit, 0));
  ASSERT_TRUE(a.r.give(b[2], 4 * kUnit, 0));
  ASSERT_TRUE(a.r.give(b[4], 4 * kUnit, 0));
  EXPECT_EQ(a.r.take(4 * kUnit, fresh), b[4]) << "not the run given back last";
  EXPECT_EQ(a.r.take(3 * kUnit, fresh), b[2]) << "a shorter request: the next bin up";
}

// takeFit: a free run only (never the untouched top), and only if the best
// fitting one is no longer than asked (a size class's gaps: mallocHole).
TEST(MidRegion, TakeFitCutsOnlyAFreeRunNoLongerThanAsked) {
  Adopted a;
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.r.takeFit(4 * kUnit), nullptr) << "no free run: took the top";
  bool fresh;
  std::vector<void *> b;
  for (int i = 0; i < 4; ++i)
    b.push_back(a.r.take((i % 2 ? 1 : (i ? 20 : 6)) * kUnit, fresh)); // 6, 1, 20, 1 units
  ASSERT_TRUE(a.r.give(b[0], 6 * kUnit, 0));
  ASSERT_TRUE(a.r.give(b[2], 20 * kUnit, 0));
  EXPECT_EQ(a.r.takeFit(8 * kUnit, 16), nullptr) << "the best fit (20 units) is longer than 16";
  EXPECT_EQ(a.r.takeFit(4 * kUnit, 16), b[0]) << "the 6-unit run, its low end";
  EXPECT_EQ(a.r.takeFit(2 * kUnit, 16), static_cast<char *>(b[0]) + 4 * kUnit);
  EXPECT_EQ(a.r.takeFit(1 * kUnit, 16), nullptr) << "only the 20-unit run is left";
  EXPECT_EQ(a.r.takeFit(8 * kUnit), b[2]) << "no bound: the 20-unit run";
  EXPECT_EQ(a.r.takeFit(0), nullptr);
}

TEST(MidRegion, MemoryGoesBackOnlyForOsPagesARunCoversWhole) {
  Adopted a;
  ASSERT_TRUE(a.ok);
  bool fresh;
  // [live 1 unit][free 40 units][live 1 unit]: the free run starts 256 B
  // into a page; its whole pages go back, the live bytes beside stay.
  auto *lo = static_cast<char *>(a.r.take(kUnit, fresh));
  auto *mid = static_cast<char *>(a.r.take(40 * kUnit, fresh));
  auto *hi = static_cast<char *>(a.r.take(kUnit, fresh));
  std::memset(lo, 0x11, kUnit);
  std::memset(mid, 0x22, 40 * kUnit);
  std::memset(hi, 0x33, kUnit);
  ASSERT_TRUE(a.r.give(mid, 40 * kUnit, 0));
  a.r.decay(10, 0, true);
  // Units 1..40: bytes 256..10495; the pages 4096..8191 are covered whole.
  const std::size_t released = a.r.releasedBytes();
  EXPECT_EQ(released, 4096u) << "pages given back";
  EXPECT_EQ(residentPages(static_cast<char *>(a.base) + 4096, 4096), 0u);
  for (std::size_t i = 0; i < kUnit; ++i) {
    ASSERT_EQ(lo[i], 0x11) << "the live block below lost byte " << i;
    ASSERT_EQ(hi[i], 0x33) << "the live block above lost byte " << i;
  }
  EXPECT_EQ(mid[0], 0x22) << "a partly covered page was given back";
}

TEST(MidRegion, ReleaseOldestStopsOnceEnoughIsBack) {
  Adopted a;
  ASSERT_TRUE(a.ok);
  bool fresh;
  std::vector<char *> runs;
  for (int i = 0; i < 4; ++i) {
    runs.push_back(static_cast<char *>(a.r.take(64 * kUnit, fresh))); // 16 KiB, page-aligned
    a.r.take(16 * kUnit, fresh);                                       // a live page between
  }
  for (int i = 0; i < 4; ++i) {
    std::memset(runs[i], 1, 64 * kUnit);
    ASSERT_TRUE(a.r.give(runs[i], 64 * kUnit, static_cast<std::uint32_t>(i)));
  }
  a.r.releaseOldest(20000); // more than one run, less than two
  EXPECT_EQ(a.r.releasedBytes(), 2 * 64 * kUnit);
  EXPECT_EQ(residentPages(runs[0], 64 * kUnit), 0u) << "the oldest run is still resident";
  EXPECT_EQ(residentPages(runs[3], 64 * kUnit), 64 * kUnit / kPage) << "the newest run went back too";
}

// One tag table holds a free run's record at both its ends and a live
// block's length at its start: a run of one unit, or a live block of one,
// beside another, must still read as what it is. Blocks of 1-3 units
// taken, grown in place and given back at random; every live block keeps
// its length (and no unit inside or at the end of one reads as live);
// once all are given back the runs have merged into one.
TEST(MidRegion, RandomOneUnitRunsAndBlocksKeepTheirTagsAndAllMergeAtTheEnd) {
  Adopted a;
  ASSERT_TRUE(a.ok);
  std::mt19937_64 rng(11);
  std::map<std::uintptr_t, std::uint32_t> live; // address -> units
  bool fresh;
  for (int step = 0; step < 40000; ++step) {
    if (rng() % 2 == 0 || live.empty()) {
      const auto units = static_cast<std::uint32_t>(1 + rng() % 3);
      void *p = a.r.take(units * kUnit, fresh);
      ASSERT_NE(p, nullptr);
      a.r.markLive(p, units * kUnit);
      live[addr(p)] = units;
    } else {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      auto *p = reinterpret_cast<char *>(it->first);
      ASSERT_EQ(a.r.liveUnits(p), it->second) << "a live block's length changed";
      for (std::uint32_t u = 1; u < it->second; ++u)
        ASSERT_EQ(a.r.liveUnits(p + u * kUnit), 0u) << "a unit inside a block reads as live";
      if (rng() % 4 == 0 && a.r.growInPlace(p, it->second * kUnit, (it->second + 1) * kUnit)) {
        ++it->second;
        a.r.markLive(p, it->second * kUnit);
        continue;
      }
      ASSERT_TRUE(a.r.give(p, it->second * kUnit, 0));
      live.erase(it);
    }
  }
  for (auto &[b, units] : live) {
    ASSERT_EQ(a.r.liveUnits(reinterpret_cast<void *>(b)), units);
    ASSERT_TRUE(a.r.give(reinterpret_cast<void *>(b), units * kUnit, 0));
  }
  EXPECT_EQ(a.r.freeBytes(), a.r.topBytes());
  EXPECT_EQ(a.r.takeFit(a.r.topBytes()), a.base) << "the free runs did not merge into one";
}

} // namespace
