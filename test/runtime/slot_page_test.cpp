// slot_page_test - the placement structure of the per-thread heaps
// (pages/slot_page.h) against a plain model: a vector of free flags and the
// searches written the obvious way. Random operations on every slot count a
// span can have (the last word partial or whole, one word, 4096 slots),
// with the invariants checked after every operation.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "defero/kbit/size_classes.h"
#include "defero/pages/slot_page.h"

namespace {

using defero::pages::kNoSlot;
using defero::pages::SlotPage;

struct Model {
  std::vector<bool> free;

  unsigned lowest() const {
    for (unsigned i = 0; i < free.size(); ++i)
      if (free[i])
        return i;
    return kNoSlot;
  }
  unsigned inRange(unsigned lo, unsigned hi) const {
    for (unsigned i = lo; i < hi && i < free.size(); ++i)
      if (free[i])
        return i;
    return kNoSlot;
  }
  unsigned inRangeDown(unsigned lo, unsigned hi) const {
    for (unsigned i = hi; i-- > lo;)
      if (i < free.size() && free[i])
        return i;
    return kNoSlot;
  }
  unsigned up(unsigned i, unsigned r) const {
    for (unsigned j = i + 1; j <= i + r && j < free.size(); ++j)
      if (free[j])
        return j;
    return kNoSlot;
  }
  unsigned down(unsigned i, unsigned r) const {
    for (unsigned d = 1; d <= r && d <= i; ++d)
      if (free[i - d])
        return i - d;
    return kNoSlot;
  }
  unsigned near(unsigned i, unsigned r, bool up_first) const {
    const unsigned u = up(i, r), d = down(i, r);
    if (u == kNoSlot)
      return d;
    if (d == kNoSlot)
      return u;
    if (u - i == i - d)
      return up_first ? u : d;
    return u - i < i - d ? u : d;
  }
  // g free slots in a row from the lowest s in [lo, hi), s a multiple of
  // g if g is a power of two, the g slots in one bitmap word.
  unsigned group(unsigned lo, unsigned hi, unsigned g) const {
    const bool aligned = (g & (g - 1)) == 0;
    for (unsigned s = lo; s + g <= hi && s + g <= free.size(); ++s) {
      if ((aligned && s % g != 0) || s / 64 != (s + g - 1) / 64)
        continue;
      bool all = true;
      for (unsigned k = 0; k < g; ++k)
        all = all && free[s + k];
      if (all)
        return s;
    }
    return kNoSlot;
  }
  // A free slot of i's aligned cell of g slots: the nearest above i first
  // (up_first), else the nearest below, or the mirror.
  unsigned inCell(unsigned i, unsigned g, bool up_first) const {
    const unsigned c = i - i % g;
    unsigned above = kNoSlot, below = kNoSlot;
    for (unsigned j = i + 1; j < c + g && j < free.size(); ++j)
      if (free[j]) {
        above = j;
        break;
      }
    for (unsigned j = i; j-- > c;)
      if (free[j]) {
        below = j;
        break;
      }
    if (up_first)
      return above != kNoSlot ? above : below;
    return below != kNoSlot ? below : above;
  }
  unsigned nearest(unsigned i, bool up_first) const {
    return near(i, static_cast<unsigned>(free.size()), up_first);
  }
  // The free slot nearest t among lo, lo + stride, ... below hi, the one
  // above on a tie.
  unsigned nearestIn(unsigned lo, unsigned hi, unsigned t, unsigned stride) const {
    unsigned best = kNoSlot;
    for (unsigned s = lo; s < hi; s += stride) {
      const unsigned d = s > t ? s - t : t - s, bd = best > t ? best - t : t - best;
      if (free[s] && (best == kNoSlot || d < bd || (d == bd && s > t)))
        best = s;
    }
    return best;
  }
  /// The first slot of the lowest run of m or more free slots that lies
  /// within one 64-slot word (first fit), or kNoSlot.
  unsigned firstRun(unsigned m) const {
    const auto n = static_cast<unsigned>(free.size());
    for (unsigned w = 0; w * 64 < n; ++w)
      for (unsigned i = w * 64; i < n && i < w * 64 + 64;) {
        unsigned len = 0;
        while (i + len < n && i + len < w * 64 + 64 && free[i + len])
          ++len;
        if (len >= m)
          return i;
        i += len ? len : 1;
      }
    return kNoSlot;
  }
};

class SlotPageRandom : public ::testing::TestWithParam<unsigned> {};

TEST_P(SlotPageRandom, EverySearchAgreesWithTheModelAfterEveryOperation) {
  const unsigned slots = GetParam();
  SlotPage pg;
  pg.start = 0x100000;
  pg.slot_bytes = 16;
  pg.inverse = defero::pages::inverseOf(16);
  pg.slots = static_cast<std::uint16_t>(slots);
  pg.initFree();
  Model m{std::vector<bool>(slots, true)};
  ASSERT_TRUE(pg.check());
  std::mt19937_64 rng(slots * 7919u);
  // A slot a search found (kNoSlot: none) is taken in the span and the model.
  auto takeBoth = [&](unsigned found) {
    if (found != kNoSlot) {
      pg.take(found);
      m.free[found] = false;
    }
  };
  for (int op = 0; op < 20000; ++op) {
    const unsigned i = static_cast<unsigned>(rng() % slots);
    const unsigned r = 1 + static_cast<unsigned>(rng() % 70);
    const bool up_first = rng() % 2;
    switch (rng() % 11) {
    case 0: { // unhinted malloc
      const unsigned want = m.lowest();
      const unsigned got = pg.takeLowest();
      ASSERT_EQ(got, want) << "takeLowest, op " << op;
      if (got != kNoSlot)
        m.free[got] = false;
      break;
    }
    case 1:
    case 2: // free a taken slot
      if (!m.free[i]) {
        const bool was_full = m.lowest() == kNoSlot;
        ASSERT_EQ(pg.release(i), was_full) << "release, op " << op;
        m.free[i] = true;
      }
      break;
    case 3: { // beside an anchor
      const unsigned want = m.near(i, r, up_first);
      ASSERT_EQ(pg.findNear(i, r, up_first), want) << "findNear(" << i << ", " << r << ")";
      ASSERT_EQ(pg.findUp(i, r), m.up(i, r)) << "findUp(" << i << ", " << r << ")";
      ASSERT_EQ(pg.findDown(i, r), m.down(i, r)) << "findDown(" << i << ", " << r << ")";
      if (r <= 31) { // (the window's reach)
        const unsigned up = m.up(i, r), down = m.down(i, r);
        ASSERT_EQ(pg.findBeside(i, r, up_first),
                  up_first ? (up != kNoSlot ? up : down) : (down != kNoSlot ? down : up))
            << "findBeside(" << i << ", " << r << ", " << up_first << ")";
      }
      takeBoth(want);
      break;
    }
    case 4: { // anywhere in the span
      const unsigned want = m.nearest(i, up_first);
      ASSERT_EQ(pg.findNearest(i, up_first), want) << "findNearest(" << i << ")";
      takeBoth(want);
      break;
    }
    case 5: { // a run, upwards and downwards
      const unsigned lo = static_cast<unsigned>(rng() % slots);
      const unsigned hi = lo + static_cast<unsigned>(rng() % (slots - lo + 1));
      ASSERT_EQ(pg.findInRange(lo, hi), m.inRange(lo, hi)) << "[" << lo << ", " << hi << ")";
      if (lo < hi) { // a tree zone's node at its place in the run
        const unsigned t = lo + static_cast<unsigned>(rng() % (hi - lo));
        for (unsigned stride : {1u, 2u})
          ASSERT_EQ(pg.findNearestInRange(lo, hi, t, stride), m.nearestIn(lo, hi, t, stride))
              << "findNearestInRange(" << lo << ", " << hi << ", " << t << ", " << stride
              << "), op " << op;
      }
      const unsigned want = m.inRangeDown(lo, hi);
      ASSERT_EQ(pg.findInRangeDown(lo, hi), want) << "down [" << lo << ", " << hi << ")";
      takeBoth(want);
      break;
    }
    case 8: { // a list's cell: g free slots in a row (1-16, and the 16-byte
              // class's grown cell of 32, and 64)
      const unsigned g = rng() % 8 == 0 ? 32u << (rng() % 2) : 1 + static_cast<unsigned>(rng() % 16);
      const unsigned lo = static_cast<unsigned>(rng() % slots);
      const unsigned hi = lo + static_cast<unsigned>(rng() % (slots - lo + 1));
      const unsigned want = m.group(lo, hi, g);
      ASSERT_EQ(pg.findFreeGroup(lo, hi, g), want)
          << "findFreeGroup(" << lo << ", " << hi << ", " << g << "), op " << op;
      takeBoth(want);
      break;
    }
    case 9: { // beside an anchor, in its cell first
      const unsigned g = 1u << (rng() % 4); // 1, 2, 4, 8: the 128, 64, 32, 16-byte classes
      const unsigned want = m.inCell(i, g, up_first);
      ASSERT_EQ(pg.findInCell(i, g, up_first), want)
          << "findInCell(" << i << ", " << g << ", " << up_first << "), op " << op;
      takeBoth(want);
      break;
    }
    case 10: { // a gang's run: m free slots in a row within a word, the
               // lowest such run (first fit), and its length
      const unsigned g = 1 + static_cast<unsigned>(rng() % 64);
      const unsigned want = m.firstRun(g);
      unsigned len = 0;
      ASSERT_EQ(pg.firstRun(g, nullptr, &len), want) << "firstRun(" << g << "), op " << op;
      if (want != kNoSlot) {
        ASSERT_GE(len, g) << "op " << op;
        ASSERT_LE(want % 64 + len, 64u) << "op " << op;
        for (unsigned k = 0; k < len; ++k)
          ASSERT_TRUE(pg.isFree(want + k)) << "op " << op;
        ASSERT_TRUE(want % 64 + len == 64 || !pg.isFree(want + len)) << "a run's length, op " << op;
      }
      if (want != kNoSlot)
        for (unsigned k = 0; k < g; ++k)
          takeBoth(want + k);
      break;
    }
    case 6: // a slot's state, and its address back to its index
      ASSERT_EQ(pg.isFree(i), static_cast<bool>(m.free[i]));
      ASSERT_EQ(pg.slotAt(pg.address(i)), i);
      break;
    default: // drain a few, so full spans and full words happen
      for (int k = 0; k < 8; ++k) {
        const unsigned want = m.lowest();
        ASSERT_EQ(pg.takeLowest(), want);
        if (want == kNoSlot)
          break;
        m.free[want] = false;
      }
    }
    ASSERT_TRUE(pg.check()) << "invariants broken after op " << op;
    ASSERT_EQ(pg.hasRoom(), m.lowest() != kNoSlot);
  }
}

INSTANTIATE_TEST_SUITE_P(SlotCounts, SlotPageRandom,
                         ::testing::Values(1u, 2u, 63u, 64u, 65u, 100u, 1365u, 2048u, 4096u));

TEST(SlotPage, SlotAtRejectsInteriorAndTailPointers) {
  SlotPage pg;
  pg.start = 0x200000;
  pg.slot_bytes = 48;
  pg.slots = 1365; // 64 KiB of 48-byte slots, 16 bytes of tail
  pg.inverse = defero::pages::inverseOf(48);
  pg.initFree();
  auto at = [&](std::uintptr_t off) { return pg.slotAt(reinterpret_cast<void *>(pg.start + off)); };
  EXPECT_EQ(at(0), 0u);
  EXPECT_EQ(at(48 * 1364), 1364u);
  EXPECT_EQ(at(48), 1u);
  EXPECT_EQ(at(47), kNoSlot) << "inside slot 0";
  EXPECT_EQ(at(16), kNoSlot);
  EXPECT_EQ(at(48 * 1365), kNoSlot) << "the span's tail is no slot";
}

TEST(SlotPage, SlotAtIsExactForEveryClassAndOffset) {
  // The one-multiply test of slotAt against division, every offset of a
  // span of every size class (including the tail past the last slot).
  namespace kbit = defero::kbit;
  for (unsigned c = 0; c < kbit::kNumClasses; ++c) {
    SlotPage pg;
    pg.start = 0x400000;
    pg.slot_bytes = static_cast<std::uint32_t>(kbit::kClassBytes[c]);
    const std::size_t span = kbit::spanBytesFor(pg.slot_bytes, 65536);
    pg.slots = static_cast<std::uint16_t>(span / pg.slot_bytes);
    pg.inverse = defero::pages::inverseOf(pg.slot_bytes);
    unsigned wrong = 0;
    for (std::uintptr_t off = 0; off < span; ++off) {
      const unsigned want =
          off % pg.slot_bytes == 0 && off / pg.slot_bytes < pg.slots ? off / pg.slot_bytes : kNoSlot;
      wrong += pg.slotAt(reinterpret_cast<void *>(pg.start + off)) != want;
      wrong += pg.slotHolding(reinterpret_cast<void *>(pg.start + off)) != off / pg.slot_bytes;
    }
    EXPECT_EQ(wrong, 0u) << "class " << c << " (" << pg.slot_bytes << " bytes)";
  }
}

/// pg, a fresh span of four bitmap words of 16 B slots.
void fourWords(SlotPage &pg) {
  pg.start = 0x500000;
  pg.slot_bytes = 16;
  pg.slots = 256;
  pg.inverse = defero::pages::inverseOf(16);
  pg.initFree();
}

TEST(SlotPage, WordClaimsGoRoundTheSpan) {
  // takeNextWord: each claim takes the next word with a free slot after the
  // last claimed one (wrapping), all its free slots, and counts them used.
  SlotPage pg;
  fourWords(pg);
  std::uint64_t bits = 0;
  for (unsigned w = 0; w < 4; ++w) {
    EXPECT_EQ(pg.takeNextWord(bits), w);
    EXPECT_EQ(bits, ~std::uint64_t{0});
  }
  EXPECT_EQ(pg.used, 256u);
  pg.release(3);
  pg.release(70);
  EXPECT_EQ(pg.takeNextWord(bits), 0u) << "wraps to the lowest word with room";
  EXPECT_EQ(bits, std::uint64_t{1} << 3);
  pg.release(5); // word 0 has room again, but the claims go on round
  EXPECT_EQ(pg.takeNextWord(bits), 1u);
  EXPECT_EQ(bits, std::uint64_t{1} << 6);
  EXPECT_EQ(pg.takeNextWord(bits), 0u);
  EXPECT_EQ(bits, std::uint64_t{1} << 5);
  EXPECT_FALSE(pg.hasRoom());
  EXPECT_EQ(pg.used, 256u) << "every slot taken or claimed";
  EXPECT_TRUE(pg.check());
}

TEST(SlotPage, AClaimTakesATouchedWordBeforeOneNeverClaimed) {
  // A word no claim took yet (fresh_word and up) waits while a word below
  // it has a free slot: touched memory is reused before new memory is.
  SlotPage pg;
  fourWords(pg);
  std::uint64_t bits = 0;
  EXPECT_EQ(pg.takeNextWord(bits), 0u);
  EXPECT_EQ(pg.takeNextWord(bits), 1u);
  EXPECT_EQ(pg.fresh_word, 2u);
  pg.release(3);
  pg.release(100);
  EXPECT_EQ(pg.takeNextWord(bits), 0u) << "a fresh word was claimed while word 0 had room";
  EXPECT_EQ(bits, std::uint64_t{1} << 3);
  EXPECT_EQ(pg.takeNextWord(bits), 1u);
  EXPECT_EQ(bits, std::uint64_t{1} << 36);
  EXPECT_EQ(pg.takeNextWord(bits), 2u) << "no touched word has room: the next fresh one";
  EXPECT_EQ(bits, ~std::uint64_t{0});
  EXPECT_EQ(pg.fresh_word, 3u);
  pg.used = 0; // (made over, as PageArena::remake does: every word fresh again)
  pg.initFree();
  EXPECT_EQ(pg.fresh_word, 0u);
  EXPECT_TRUE(pg.check());
}

TEST(SlotPageDeathTest, TakingATakenSlotIsReportedNotCorrupted) {
  SlotPage pg;
  pg.start = 0x300000;
  pg.slot_bytes = 32;
  pg.slots = 64;
  pg.initFree();
  pg.take(5);
  EXPECT_DEATH(pg.take(5), "^defero: defero\\(0x3000a0\\): internal error: a slot taken twice");
}

} // namespace
