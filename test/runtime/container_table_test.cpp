// container_table_test - a thread's table of the containers it inserts into
// (pages/container_table.h): it grows before it forgets, keeps every
// entry's contents through a growth, and forgets all at once only past its
// largest size; a tree's zones' entries stay with it through a growth and
// serve the next trees, cleared, once forgotten.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "defero/pages/container_table.h"

namespace {

using defero::pages::ContainerSlot;
using defero::pages::ContainerTable;

/// Distinct fake container addresses, spaced like real containers.
const void *containerAt(std::size_t i) {
  return reinterpret_cast<const void *>(std::uintptr_t{0x10000} + 48 * i);
}

TEST(ContainerTable, GrowsAndKeepsEveryEntryPastItsFirstSize) {
  ContainerTable t;
  ASSERT_TRUE(t.ready());
  const std::size_t first = t.slots();
  // As many containers as the largest table holds at half load.
  const std::size_t n = ContainerTable::kMaxSlots / 2;
  ASSERT_GT(n, first / 2);
  for (std::size_t i = 0; i < n; ++i) {
    ContainerSlot &s = t.find(containerAt(i));
    EXPECT_EQ(s.runs, 0u) << "a new entry starts empty: " << i;
    s.runs = static_cast<std::uint8_t>(i % 251 + 1);
    s.policy = static_cast<std::int8_t>(i % 3);
  }
  EXPECT_EQ(t.size(), n);
  EXPECT_GE(t.slots(), 2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    ContainerSlot &s = t.find(containerAt(i));
    ASSERT_EQ(s.container, containerAt(i));
    EXPECT_EQ(s.runs, i % 251 + 1) << "entry " << i << " lost its contents in a growth";
    EXPECT_EQ(s.policy, static_cast<std::int8_t>(i % 3));
  }
  EXPECT_EQ(t.size(), n) << "a lookup of a known container made a new entry";
}

TEST(ContainerTable, NullIsItsOwnEntry) {
  ContainerTable t;
  ASSERT_TRUE(t.ready());
  t.find(nullptr).runs = 7;
  EXPECT_EQ(t.find(nullptr).runs, 7u);
  EXPECT_EQ(t.find(containerAt(1)).runs, 0u);
  EXPECT_EQ(t.size(), 2u);
}

TEST(ContainerTable, ForgetsAllOnlyPastItsLargestSize) {
  ContainerTable t;
  ASSERT_TRUE(t.ready());
  const std::size_t cap = ContainerTable::kMaxSlots / 2;
  for (std::size_t i = 0; i < cap; ++i)
    t.find(containerAt(i)).runs = 1;
  EXPECT_EQ(t.size(), cap);
  EXPECT_EQ(t.slots(), ContainerTable::kMaxSlots);
  EXPECT_EQ(t.find(containerAt(0)).runs, 1u) << "forgot before it was full";
  // One more container: the table starts afresh with it alone.
  EXPECT_EQ(t.find(containerAt(cap)).runs, 0u);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.find(containerAt(0)).runs, 0u) << "an entry survived the forget";
}

TEST(ContainerTable, ForgetEmptiesAndTheTableIsUsableAfter) {
  ContainerTable t;
  ASSERT_TRUE(t.ready());
  for (std::size_t i = 0; i < 10000; ++i)
    t.find(containerAt(i)).runs = 2;
  t.forget();
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.find(containerAt(5)).runs, 0u);
  EXPECT_EQ(t.size(), 1u);
}

TEST(ContainerTable, ATreesZonesStayWithItThroughAGrowthAndAreReusedClearedOnceForgotten) {
  ContainerTable t;
  ASSERT_TRUE(t.ready());
  ContainerSlot *zones = t.zones(t.find(containerAt(0)));
  ASSERT_NE(zones, nullptr);
  EXPECT_EQ(t.zones(t.find(containerAt(0))), zones) << "made twice";
  zones[(1u << 8) | 255].runs = 3;
  zones[2].runs = 1;
  ContainerSlot *other = t.zones(t.find(containerAt(1)));
  ASSERT_NE(other, nullptr);
  EXPECT_NE(other, zones);
  // A growth moves the entries, not their zones.
  for (std::size_t i = 2; i < ContainerTable::kMaxSlots / 2 - 10; ++i) // (short of forgetting)
    t.find(containerAt(i));
  EXPECT_GT(t.slots(), std::size_t{1} << ContainerTable::kFirstBits);
  EXPECT_EQ(t.zones(t.find(containerAt(0))), zones);
  EXPECT_EQ(zones[(1u << 8) | 255].runs, 3u);
  // Forgotten with the table: the next trees take the same arrays, cleared.
  t.forget();
  ContainerSlot *a = t.zones(t.find(containerAt(7))), *b = t.zones(t.find(containerAt(8)));
  EXPECT_TRUE((a == zones && b == other) || (a == other && b == zones)) << "new memory, not reuse";
  for (unsigned i = 2; i < ContainerTable::kZoneSlots; ++i) {
    ASSERT_EQ(a[i].runs, 0u) << "entry " << i << " kept a run of a forgotten tree";
    ASSERT_EQ(b[i].runs, 0u);
    ASSERT_EQ(a[i].up.span, nullptr);
  }
  ContainerSlot *c = t.zones(t.find(containerAt(9)));
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
}

} // namespace
