// c_api_test.cpp - the C API of <defero/defero.h> and the hint ABI, against
// the process heap (Defero::core: defero_malloc beside glibc's malloc).
//
// CTest runs every test in its own process with DEFERO_POLICY=auto (the
// CApiFirstPolicy suite with DEFERO_POLICY=first), and five of them need a
// fresh process: run together in one, the holes earlier tests leave change
// which slot malloc and the search beside a tail find
// (CApiHints.AnInsertHoppingFromAnotherListTakesMallocsSlotWhenItsTailHasNoRoom,
// CApiHints.AContainerHintBetweenAListsInsertsTakesMallocsSlotAndTheListGoesOn,
// CApiSpans.ASizeShiftReusesTheSpansTheLastSizeEmptied), and the spans and
// the high of taken slots they leave a class decide whether a list's cell
// may take a whole span (PlacementLayer::overgrown:
// CApiHints.ListsFilledInTurnKeepEachListInACellOfTwoLines,
// CApiHints.ACellAClearedListGaveBackIsTakenBeforeTheHeapGrows). The other
// tests assume no fresh heap.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <sys/mman.h>

#include "defero/defero.h"
#include "defero/kbit/size_classes.h"
#include "test_util.h"

namespace test = defero::test;
using Stats = std::map<std::string, std::string>;

namespace {

std::uintptr_t addr(const void *p) { return reinterpret_cast<std::uintptr_t>(p); }

std::string statsText() {
  test::TempFile f;
  FILE *out = std::fopen(f.path().c_str(), "w");
  EXPECT_NE(out, nullptr);
  EXPECT_EQ(defero_stats_json(out), 0);
  std::fclose(out);
  return f.contents();
}

Stats stats() {
  const std::string text = statsText();
  Stats s;
  EXPECT_TRUE(test::Json::parse(text, s)) << "not JSON: " << text;
  return s;
}

long long num(const Stats &s, const std::string &key) {
  auto it = s.find(key);
  EXPECT_NE(it, s.end()) << "no key " << key;
  return it == s.end() ? -1 : std::stoll(it->second);
}

/// Bytes of one K-class under the process heap's K.
std::uintptr_t classBytes() {
  const long long k = num(stats(), "k");
  return std::uintptr_t{1} << (32 - k);
}

/// Room in the K-class of `a` (a free chunk of a's size class there) and in
/// a lower class (so First would not pick a's class).
struct Room {
  std::vector<void *> held;
  void *a = nullptr;
  long long class_a = -1, lower = -1;
  ~Room() {
    for (void *p : held)
      defero_free(p);
  }
};

constexpr std::size_t kNode = 256;

void makeRoom(Room &r) {
  std::map<long long, std::vector<void *>> by;
  for (int i = 0; i < 512; ++i) {
    void *p = defero_malloc(kNode);
    ASSERT_NE(p, nullptr);
    by[defero_class_of(p)].push_back(p);
  }
  ASSERT_GE(by.size(), 3u);
  auto lowest = by.begin();
  auto it = std::next(by.begin());
  while (it != by.end() && it->second.size() < 2)
    ++it;
  ASSERT_NE(it, by.end());
  r.a = it->second[0];
  r.class_a = it->first;
  r.lower = lowest->first;
  void *b = it->second[1], *x = lowest->second[0];
  for (auto &[k, v] : by)
    for (void *p : v)
      if (p != b && p != x)
        r.held.push_back(p);
  defero_free(b); // room in A
  defero_free(x); // room below A
}

/// Makes `container` the one the calling thread's last hinted allocation
/// served, so that a neighbour hint for it continues its inserts (under
/// auto, a hint that hops from another container and finds no room beside
/// its anchor takes malloc's slot: ProcessHeap's hopsContainers). Two
/// container hints in a row: the first hops and leaves the thread's recent
/// node as it was; the second is the container being filled.
void insertedLastInto(const void *container, std::size_t size = kNode) {
  for (int i = 0; i < 2; ++i) {
    void *n = __defero_new_hinted(size, 3, container, nullptr, 0);
    ASSERT_NE(n, nullptr);
    defero_free(n);
  }
}

void requireAutoPolicy() {
  const Stats s = stats();
  ASSERT_EQ(s.at("policy"), "auto") << "run with DEFERO_POLICY unset or auto (CTest sets it)";
}

} // namespace

// --- statistics ------------------------------------------------------------

TEST(CApiStats, NullOrUnwritableStreamReturnsMinusOne) {
  EXPECT_EQ(defero_stats_json(nullptr), -1);
  FILE *ro = std::fopen("/dev/null", "r");
  ASSERT_NE(ro, nullptr);
  EXPECT_EQ(defero_stats_json(ro), -1) << "a write that fails";
  std::fclose(ro);
}

TEST(CApiStats, JsonHasEveryKeyOfTheDesign) {
  void *p = defero_malloc(100);
  FILE *f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(defero_stats_json(f), 0);
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;)
    text += static_cast<char>(c);
  std::fclose(f);
  defero_free(p);

  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n') << "the object and a newline";
  EXPECT_EQ(text.find('\n'), text.size() - 1) << "one line";
  for (const char *key : {"allocs", "frees", "peak_live_bytes", "peak_footprint_bytes", "hints",
                          "neighbor", "tree", "container", "hinted_allocs", "hint_same_class",
                          "policy", "k", "backend"})
    EXPECT_NE(text.find(std::string("\"") + key + "\":"), std::string::npos) << key;
  Stats s;
  ASSERT_TRUE(test::Json::parse(text, s)) << text;
  EXPECT_EQ(s.at("hints"), "{}") << "hints is an object";
  for (const char *key : {"allocs", "frees", "peak_live_bytes", "peak_footprint_bytes",
                          "hints.neighbor", "hints.tree", "hints.container", "hinted_allocs",
                          "hint_same_class", "k"}) {
    ASSERT_TRUE(s.count(key)) << key;
    EXPECT_NE(s.at(key).find_first_of("0123456789"), std::string::npos) << key;
    EXPECT_EQ(s.at(key).find_first_not_of("0123456789"), std::string::npos)
        << key << " is a non-negative integer: " << s.at(key);
  }
  EXPECT_GE(num(s, "allocs"), 1);
  const std::string policy = s.at("policy");
  EXPECT_TRUE(policy == "first" || policy == "best" || policy == "path" || policy == "auto")
      << policy;
  EXPECT_LE(num(s, "k"), 32);
  EXPECT_EQ(s.at("backend"), "kbit");
  EXPECT_EQ(s.count("hw"), 0u) << "hw only in real-time builds";
}

TEST(CApiStats, CountsFollowTheCalls) {
  const Stats s0 = stats();
  std::vector<void *> v;
  std::size_t small_bytes = 0;
  for (int i = 0; i < 1000; ++i) {
    void *p = defero_malloc(static_cast<std::size_t>(i % 300));
    small_bytes += defero_usable_size(p);
    v.push_back(p);
  }
  void *big = defero_malloc(10 << 20);
  void *near = defero_alloc_near(64, v[64]); // v[64]: 64 bytes, same size class
  void *path = defero_alloc_path(64, 5, 3);
  ASSERT_TRUE(big && near && path);
  const Stats s1 = stats();
  EXPECT_EQ(num(s1, "allocs") - num(s0, "allocs"), 1003);
  EXPECT_EQ(num(s1, "frees") - num(s0, "frees"), 0);
  EXPECT_GE(num(s1, "peak_footprint_bytes"), 10 << 20);
  EXPECT_GE(num(s1, "peak_live_bytes"),
            num(s0, "live_bytes") + static_cast<long long>(small_bytes) + (10 << 20));
  EXPECT_EQ(num(s1, "hinted_allocs"), num(s0, "hinted_allocs"))
      << "alloc_near/alloc_path are explicit, not hint-ABI allocations";
  for (void *p : v)
    defero_free(p);
  defero_free(big);
  defero_free(near);
  defero_free(path);
  defero_free(nullptr); // a no-op, not counted
  const Stats s2 = stats();
  EXPECT_EQ(num(s2, "frees") - num(s0, "frees"), 1003);
  EXPECT_EQ(num(s2, "allocs"), num(s1, "allocs"));
  EXPECT_EQ(num(s2, "live_bytes"), num(s0, "live_bytes"));
  // Live bytes are published in batches (the bound: LiveTotals in
  // pages/counters.h); here the peak must hold s1's exact live bytes (a
  // statistics read publishes), and it never decreases (the test below).
  EXPECT_GE(num(s2, "peak_live_bytes") + 65536, num(s1, "peak_live_bytes"));
}

// Regression test for a fixed bug (ProcessHeap::formatStats, now in runtime/src/stats.cpp):
// the reported peak_live_bytes is max(published peak, live + this thread's
// unpublished pending bytes), but that value is never stored, so a later
// snapshot can report a *lower* peak after frees. Repro (one thread):
// malloc 10 MiB (published), then two 64-byte allocations (pending),
// stats -> peak P; free everything; stats -> peak P - 128.
TEST(CApiStats, PeakLiveBytesNeverDecreases) {
  void *big = defero_malloc(10 << 20);
  void *a = defero_malloc(64), *b = defero_malloc(64);
  const long long p1 = num(stats(), "peak_live_bytes");
  defero_free(a);
  defero_free(b);
  defero_free(big);
  const long long p2 = num(stats(), "peak_live_bytes");
  EXPECT_GE(p2, p1) << "a peak went down";
}

// A thread whose live bytes rise by hinted placements alone (a list built
// through the fused entry: continuations, runs, no word cache refilled)
// publishes them as it goes, so the peak sees the rise even when every
// node is freed before the next statistics read. Before, placements never
// published: the peak stayed where it was.
TEST(CApiStats, APeakReachedByHintedPlacementsAloneIsSeen) {
  requireAutoPolicy();
  const Stats s0 = stats();
  const long long live0 = num(s0, "live_bytes"), peak0 = num(s0, "peak_live_bytes");
  constexpr std::size_t kSize = 256;
  const long long rise = std::max(8LL << 20, peak0 - live0 + (8LL << 20));
  static void *head[2] = {head, head};
  std::vector<void *> nodes;
  void *tail = head;
  for (long long made = 0; made < rise; made += static_cast<long long>(kSize)) {
    auto **n = static_cast<void **>(__defero_new_hinted(kSize, 1, head, tail, 0));
    ASSERT_NE(n, nullptr);
    n[0] = head;
    n[1] = tail;
    static_cast<void **>(tail)[0] = n;
    head[1] = n;
    tail = n;
    nodes.push_back(n);
  }
  for (void *n : nodes)
    defero_free(n);
  const Stats s1 = stats();
  // What publication may miss (LiveTotals, pages/counters.h): 256 KiB, one
  // span of a streak, and the stacks' blocks; 1 MiB covers them here.
  EXPECT_GE(num(s1, "peak_live_bytes"), live0 + rise - (1LL << 20))
      << "the hinted placements' live bytes never reached the peak";
  EXPECT_EQ(num(s1, "live_bytes"), live0);
}

// --- class_of, usable_size -------------------------------------------------

TEST(CApiBasics, ClassOf) {
  int local = 0;
  void *glibc = std::malloc(16);
  EXPECT_EQ(defero_class_of(&local), -1) << "a stack address";
  EXPECT_EQ(defero_class_of(glibc), -1) << "glibc's heap";
  EXPECT_EQ(defero_class_of(nullptr), -1);
  std::free(glibc);
  const std::uintptr_t cb = classBytes();
  std::vector<void *> v;
  for (int i = 0; i < 2000; ++i)
    v.push_back(defero_malloc(64));
  std::map<std::uintptr_t, long long> cls;
  for (void *p : v) {
    ASSERT_GE(defero_class_of(p), 0);
    cls[addr(p)] = defero_class_of(p);
  }
  int pairs = 0;
  for (auto it = cls.begin(); it != cls.end(); ++it) {
    const auto [a, k] = *it;
    auto far = cls.find(a + cb);
    if (far != cls.end()) {
      EXPECT_EQ(far->second, k + 1) << "two blocks one K-class apart";
      ++pairs;
    }
    auto next = std::next(it);
    if (next != cls.end()) {
      // Classes are consecutive slices of the window: the key difference of
      // two addresses is their distance in classes, rounded either way.
      const long long d = static_cast<long long>((next->first - a) / cb);
      EXPECT_TRUE(next->second - k == d || next->second - k == d + 1)
          << reinterpret_cast<void *>(a) << " class " << k << ", "
          << reinterpret_cast<void *>(next->first) << " class " << next->second;
    }
  }
  EXPECT_GT(pairs, 100);
  for (void *p : v)
    defero_free(p);
}

TEST(CApiBasics, UsableSize) {
  int local = 0;
  EXPECT_EQ(defero_usable_size(nullptr), 0u);
  EXPECT_EQ(defero_usable_size(&local), 0u);
  for (std::size_t sz : {std::size_t{0}, std::size_t{1}, std::size_t{16}, std::size_t{17},
                         std::size_t{1000}, defero::kbit::kMaxSmallBytes,
                         defero::kbit::kMaxSmallBytes + 1, std::size_t{3} << 20}) {
    void *p = defero_malloc(sz);
    ASSERT_NE(p, nullptr) << sz;
    EXPECT_GE(defero_usable_size(p), sz);
    EXPECT_EQ(addr(p) % 16, 0u);
    const std::size_t usable = defero_usable_size(p);
    test::fillFast(p, usable, sz + 1); // all of it is ours to write
    EXPECT_TRUE(test::checkFast(p, usable, sz + 1));
    defero_free(p);
  }
}

TEST(CApiBasicsDeathTest, MisuseIsReported) {
  int local = 0;
  void *p = defero_malloc(48);
  defero_free(p);
  EXPECT_DEATH(defero_free(p), test::fatalLine("defero_free", p, test::kDoubleFree));
  char *q = static_cast<char *>(defero_malloc(48));
  EXPECT_DEATH(defero_free(q + 16), test::fatalLine("defero_free", q + 16, test::kInterior));
  char b[32];
  std::snprintf(b, sizeof b, "%p", static_cast<void *>(&local));
  EXPECT_DEATH(defero_free(&local), std::string("^defero: defero_free\\(") + b +
                                        "\\): [^\n]*not [^\n]*this heap[^\n]*\n$");
  defero_free(q);
}

// --- free stacks ------------------------------------------------------------

// A freed block waits on its class's free stack in the freeing thread's
// heap: the next malloc of the class takes the block freed last (its line
// still in the cache), and a malloc of another class does not.
TEST(CApiFreeStack, TheNextMallocOfTheClassGetsTheBlockFreedLast) {
  void *a = defero_malloc(80), *b = defero_malloc(80), *c = defero_malloc(80);
  ASSERT_TRUE(a && b && c);
  defero_free(a);
  defero_free(b);
  void *other = defero_malloc(300); // another class: not b
  EXPECT_NE(other, b);
  EXPECT_NE(other, a);
  EXPECT_EQ(defero_malloc(80), b) << "last in, first out";
  EXPECT_EQ(defero_malloc(80), a);
  for (void *p : {a, b, c, other})
    defero_free(p);
}

// A block another thread allocated goes home to its owner (the outbox), not
// onto the freeing thread's stack: had it stayed, the freeing thread's next
// blocks would share cache lines with blocks the owner still uses (larson
// x2 ran 1.3x slower so). The other thread lives on meanwhile; the stats
// still count one free and one allocation per call.
TEST(CApiFreeStack, AnotherThreadsBlocksGoHomeSoNoLineHoldsTwoThreadsLiveBlocks) {
  constexpr int kN = 256;
  std::vector<void *> theirs(2 * kN);
  std::atomic<int> step{0};
  std::thread other([&] {
    for (void *&p : theirs)
      p = defero_malloc(16); // four to a line, in address order
    step = 1;
    while (step != 2)
      std::this_thread::yield();
    for (int i = 1; i < 2 * kN; i += 2)
      defero_free(theirs[i]);
  });
  while (step != 1)
    std::this_thread::yield();
  std::set<std::uintptr_t> their_lines; // the lines of the blocks it keeps
  for (int i = 1; i < 2 * kN; i += 2) {
    ASSERT_NE(theirs[i], nullptr);
    their_lines.insert(reinterpret_cast<std::uintptr_t>(theirs[i]) / 64);
  }
  const Stats s0 = stats();
  for (int i = 0; i < 2 * kN; i += 2)
    defero_free(theirs[i]);
  std::vector<void *> mine(kN);
  int shared = 0;
  for (void *&p : mine) {
    p = defero_malloc(16);
    ASSERT_NE(p, nullptr);
    shared += their_lines.count(reinterpret_cast<std::uintptr_t>(p) / 64) != 0;
  }
  const Stats s1 = stats();
  EXPECT_EQ(shared, 0) << "blocks of mine in lines the other thread uses";
  EXPECT_EQ(num(s1, "frees") - num(s0, "frees"), kN);
  EXPECT_EQ(num(s1, "allocs") - num(s0, "allocs"), kN);
  step = 2;
  other.join();
  for (void *p : mine)
    defero_free(p);
}

// A stack holds a bounded number of blocks: past it, frees go back to the
// spans, and every block stays usable and distinct (nothing handed out
// twice, nothing lost from the counts).
TEST(CApiFreeStack, AFullStackGivesBlocksBackToTheirSpans) {
  constexpr int kN = 5000; // more than any stack of 32 B blocks holds
  const Stats s0 = stats();
  std::vector<void *> v(kN);
  for (auto &p : v) {
    p = defero_malloc(32);
    ASSERT_NE(p, nullptr);
  }
  for (void *p : v)
    defero_free(p);
  std::set<void *> again;
  for (int i = 0; i < kN; ++i) {
    void *p = defero_malloc(32);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(again.insert(p).second) << "handed out twice: " << p;
    std::memset(p, 0x5A, 32);
  }
  for (void *p : again)
    defero_free(p);
  const Stats s1 = stats();
  EXPECT_EQ(num(s1, "allocs") - num(s0, "allocs"), 2 * kN);
  EXPECT_EQ(num(s1, "frees") - num(s0, "frees"), 2 * kN);
  EXPECT_EQ(num(s1, "live_bytes"), num(s0, "live_bytes"));
}

// Regression test for a fixed bug (kbit_heap.h, KBitHeap::nearest(); see kbit_heap_test.cpp): with the
// default K=20, a hint into a block of another size class makes
// defero_alloc_near return a block of the hint's size class.
TEST(CApiBasics, AllocNearWithAHintOfAnotherSizeKeepsTheSize) {
  void *small = defero_malloc(16);
  void *big = defero_alloc_near(1000, small);
  EXPECT_GE(defero_usable_size(big), 1000u);
  defero_free(big);
  defero_free(small);
}

// --- the hint ABI --------------------------------------------------------------

TEST(CApiHints, NeighborHintIsOneShotAndLandsInTheNeighborsClass) {
  requireAutoPolicy();
  Room r;
  makeRoom(r);
  ASSERT_NE(r.a, nullptr);
  static int container;
  insertedLastInto(&container);
  const Stats s0 = stats();
  __defero_hint_neighbor(&container, r.a);
  const Stats s1 = stats();
  EXPECT_EQ(num(s1, "hints.neighbor") - num(s0, "hints.neighbor"), 1);
  EXPECT_EQ(num(s1, "hinted_allocs"), num(s0, "hinted_allocs")) << "nothing allocated yet";
  void *p = defero_malloc(kNode);
  const Stats s2 = stats();
  EXPECT_EQ(defero_class_of(p), r.class_a) << "the neighbour's class had room";
  EXPECT_EQ(num(s2, "hinted_allocs") - num(s1, "hinted_allocs"), 1);
  EXPECT_EQ(num(s2, "hint_same_class") - num(s1, "hint_same_class"), 1);
  void *q = defero_malloc(kNode);
  const Stats s3 = stats();
  EXPECT_EQ(num(s3, "hinted_allocs"), num(s2, "hinted_allocs")) << "the hint was one-shot";
  EXPECT_EQ(num(s3, "hint_same_class"), num(s2, "hint_same_class"));
  EXPECT_LE(defero_class_of(q), r.lower) << "an unhinted malloc is First: lowest class";
  r.held.push_back(p);
  r.held.push_back(q);
}

TEST(CApiHints, AHintBelongsToItsThread) {
  requireAutoPolicy();
  static int container;
  void *anchor = defero_malloc(64);
  const long long h0 = num(stats(), "hinted_allocs");
  __defero_hint_neighbor(&container, anchor);
  std::thread([] { defero_free(defero_malloc(64)); }).join();
  EXPECT_EQ(num(stats(), "hinted_allocs"), h0) << "another thread's malloc took the hint";
  void *p = defero_malloc(64);
  EXPECT_EQ(num(stats(), "hinted_allocs"), h0 + 1) << "this thread's next malloc is hinted";
  defero_free(p);
  defero_free(anchor);
}

TEST(CApiHints, AnExplicitAllocationConsumesThePendingHint) {
  static int container;
  void *anchor = defero_malloc(64);
  const long long h0 = num(stats(), "hinted_allocs");
  __defero_hint_neighbor(&container, anchor);
  void *n = defero_alloc_near(64, anchor);
  void *p = defero_malloc(64);
  EXPECT_EQ(num(stats(), "hinted_allocs"), h0) << "the hint applied to alloc_near only";
  __defero_hint_container(&container);
  void *q = defero_alloc_path(64, 1, 1);
  void *r = defero_malloc(64);
  EXPECT_EQ(num(stats(), "hinted_allocs"), h0);
  for (void *x : {anchor, n, p, q, r})
    defero_free(x);
}

TEST(CApiHints, ContainerHintAllocatesWithTheContainersLastNode) {
  requireAutoPolicy();
  Room r;
  makeRoom(r);
  ASSERT_NE(r.a, nullptr);
  static int container;
  const Stats s0 = stats();
  __defero_hint_container(&container); // first node: no position known
  void *first = defero_malloc(kNode);
  __defero_hint_neighbor(&container, r.a); // now the container's last node is in A
  void *second = defero_malloc(kNode);
  ASSERT_EQ(defero_class_of(second), r.class_a);
  // Room in A again, then a container hint: it follows the last node.
  defero_free(r.a);
  std::erase(r.held, r.a);
  __defero_hint_container(&container);
  void *third = defero_malloc(kNode);
  EXPECT_EQ(defero_class_of(third), r.class_a) << "placed with the container's last node";
  const Stats s1 = stats();
  EXPECT_EQ(num(s1, "hints.container") - num(s0, "hints.container"), 2);
  EXPECT_EQ(num(s1, "hints.neighbor") - num(s0, "hints.neighbor"), 1);
  EXPECT_EQ(num(s1, "hinted_allocs") - num(s0, "hinted_allocs"), 3);
  for (void *p : {first, second, third})
    r.held.push_back(p);
}

namespace {
// libstdc++'s _Rb_tree_node_base.
struct RbNode {
  int color;
  RbNode *parent, *left, *right;
};
} // namespace

TEST(CApiHints, TreeHintWithAHeapParentGivesAHintedAllocation) {
  requireAutoPolicy();
  static int container;
  RbNode header{}; // not a heap chunk: where the walk to the root stops
  auto *root = static_cast<RbNode *>(defero_malloc(sizeof(RbNode) + 16));
  auto *right = static_cast<RbNode *>(defero_malloc(sizeof(RbNode) + 16));
  auto *leaf = static_cast<RbNode *>(defero_malloc(sizeof(RbNode) + 16));
  *root = RbNode{1, &header, nullptr, right};
  *right = RbNode{1, root, leaf, nullptr};
  *leaf = RbNode{0, right, nullptr, nullptr};
  header.parent = root;
  const Stats s0 = stats();
  __defero_hint_tree(&container, leaf, 1);
  void *p = defero_malloc(sizeof(RbNode) + 16);
  ASSERT_NE(p, nullptr);
  const Stats s1 = stats();
  EXPECT_EQ(num(s1, "hints.tree") - num(s0, "hints.tree"), 1);
  EXPECT_EQ(num(s1, "hinted_allocs") - num(s0, "hinted_allocs"), 1);
  EXPECT_GE(defero_usable_size(p), sizeof(RbNode) + 16);
  void *q = defero_malloc(sizeof(RbNode) + 16);
  EXPECT_EQ(num(stats(), "hinted_allocs"), num(s1, "hinted_allocs")) << "one-shot";
  // The nodes were only read, never written.
  EXPECT_EQ(root->right, right);
  EXPECT_EQ(right->left, leaf);
  EXPECT_EQ(leaf->parent, right);
  for (void *x : {p, q, static_cast<void *>(root), static_cast<void *>(right),
                  static_cast<void *>(leaf)})
    defero_free(x);
}

namespace {
/// std::allocator's twin over defero_malloc (so a set's nodes consume the
/// tree hint sent before its insert).
template <class T> struct DeferoAlloc {
  using value_type = T;
  DeferoAlloc() = default;
  template <class U> DeferoAlloc(const DeferoAlloc<U> &) {}
  T *allocate(std::size_t n) { return static_cast<T *>(defero_malloc(n * sizeof(T))); }
  void deallocate(T *p, std::size_t) { defero_free(p); }
  template <class U> bool operator==(const DeferoAlloc<U> &) const { return true; }
};
using HintedSet = std::set<int, std::less<int>, DeferoAlloc<int>>;

/// Inserts k into s with the tree hint the plugin sends for it: the new
/// leaf's parent (the successor if it has no left child, else the
/// predecessor) and the side.
void insertHinted(HintedSet &s, int k) {
  auto pos = s.lower_bound(k);
  if (pos != s.end() && *pos == k)
    return;
  const void *parent = &s; // (an empty set: the header)
  int left = 1;
  if (!s.empty()) {
    auto *succ = pos == s.end() ? nullptr : reinterpret_cast<const RbNode *>(pos._M_node);
    if (succ && succ->left == nullptr) {
      parent = succ;
    } else {
      parent = std::prev(pos)._M_node;
      left = 0;
    }
  }
  __defero_hint_tree(&s, parent, left);
  s.insert(pos, k);
}

/// A set of n keys inserted with their tree hints in the order of an LCG
/// from `seed` (random key order).
std::unique_ptr<HintedSet> randomHintedSet(int n, unsigned seed) {
  auto s = std::make_unique<HintedSet>();
  unsigned x = seed;
  for (int i = 0; i < n; ++i) {
    x = x * 1103515245u + 12345u;
    insertHinted(*s, static_cast<int>(x >> 4));
  }
  return s;
}

/// The first `bits` steps of node's path from the root (1: right), or -1
/// for a node less deep.
long long pathPrefix(const RbNode *node, const void *header, unsigned bits) {
  std::uint64_t steps = 0;
  unsigned depth = 0;
  for (const RbNode *x = node; x->parent != header; x = x->parent)
    steps |= std::uint64_t{x->parent->left != x} << depth++;
  return depth < bits ? -1 : static_cast<long long>(steps >> (depth - bits));
}
} // namespace

TEST(CApiTrees, TheSubtreesOfALargeTreeFillPagesOfTheirOwn) {
  requireAutoPolicy();
  // Keys inserted in random order: without zones each node lands where
  // the tree's run was when it came, so every subtree is spread over
  // nearly all the tree's pages.
  auto s = randomHintedSet(60000, 12345);
  const void *header = reinterpret_cast<const char *>(s.get()) + 8;
  std::map<long long, std::set<std::uintptr_t>> pages_of; // subtree -> its pages
  std::set<std::uintptr_t> all;
  for (auto it = s->begin(); it != s->end(); ++it) {
    auto *n = reinterpret_cast<const RbNode *>(it._M_node);
    all.insert(addr(n) >> 12);
    if (const long long sub = pathPrefix(n, header, 6); sub >= 0)
      pages_of[sub].insert(addr(n) >> 12);
  }
  ASSERT_EQ(pages_of.size(), 64u);
  std::size_t pages = 0;
  for (const auto &[sub, p] : pages_of)
    pages += p.size();
  const double mean = static_cast<double>(pages) / 64;
  // A subtree of about 940 nodes (1/64 of the tree) fills a few dozen
  // pages (at two slots a node of 48 bytes: 22 at the least): 124 of the
  // tree's 865 in zones, 381 of 805 without.
  EXPECT_LT(mean, static_cast<double>(all.size()) / 4)
      << "a subtree's nodes lie on " << mean << " of the tree's " << all.size() << " pages";
  s.reset();
}

TEST(CApiTrees, AZonesRunsHoldTheirNodesInAboutKeyOrder) {
  requireAutoPolicy();
  // A node placed in its zone's run takes the slot nearest its place in
  // the zone's key range (its path below the zone read as a fraction), so
  // an in-order walk that comes back to a page mostly comes back higher
  // up: a stream the hardware prefetches. Seen: 69% of the walk's returns
  // to a page go up (60% with runs filled in insertion order: each node
  // at the next free slot, its children beside it).
  auto s = randomHintedSet(60000, 12345);
  std::map<std::uintptr_t, std::uintptr_t> last; // page -> the walk's last read there
  long long returns = 0, upward = 0;
  for (auto it = s->begin(); it != s->end(); ++it) {
    const std::uintptr_t a = addr(reinterpret_cast<const RbNode *>(it._M_node));
    auto [at, first] = last.try_emplace(a >> 12, a);
    if (!first) {
      ++returns;
      upward += a > at->second;
      at->second = a;
    }
  }
  ASSERT_GT(returns, 60000 / 2);
  EXPECT_GT(upward * 100, returns * 65)
      << upward << " of the walk's " << returns << " returns to a page go up";
  s.reset();
}

TEST(CApiTrees, ALeftChildGoesBelowItsParentAndARightChildAbove) {
  requireAutoPolicy();
  // A set filled in random key order: a node placed beside its parent (in
  // the same or the next cache line) goes below it when it is the left
  // child and above it when it is the right one, so in-order walks up the
  // addresses. When the preferred side has no free slot within reach the
  // search takes the other side: in a tree's run, the free slot between
  // two nodes is wanted by the lower one's right child and the upper one's
  // left child alike. Seen: 3,435 of 4,363 (79%); a placement blind to
  // the side would put about half on the wrong side.
  auto s = randomHintedSet(20000, 777);
  const void *header = reinterpret_cast<const char *>(s.get()) + 8;
  long long beside = 0, right_side = 0;
  for (auto it = s->begin(); it != s->end(); ++it) {
    auto *n = reinterpret_cast<const RbNode *>(it._M_node);
    const RbNode *parent = n->parent;
    if (parent == header)
      continue;
    const long long d = static_cast<long long>(addr(n)) - static_cast<long long>(addr(parent));
    if (d == 0 || d > 128 || d < -128)
      continue;
    ++beside;
    right_side += (parent->left == n) == (d < 0);
  }
  ASSERT_GT(beside, 20000 / 10) << "few children lie beside their parents";
  EXPECT_GT(right_side * 3, beside * 2)
      << right_side << " of " << beside << " children beside their parent lie on their side";
  s.reset();
}

TEST(CApiTrees, RebuildingALargeTreeReusesTheSpansItsLastBuildFreed) {
  requireAutoPolicy();
  // A tree large enough to have zones, built and destroyed three times:
  // its zones' runs find the spans the last build emptied (they took only
  // fresh spans, so the heap grew by a tree's zones every build).
  std::set<std::uintptr_t> spans, after[3];
  for (int rep = 0; rep < 3; ++rep) {
    auto s = randomHintedSet(60000, 12345);
    for (auto it = s->begin(); it != s->end(); ++it)
      spans.insert(addr(it._M_node) >> 16);
    s.reset();
    after[rep] = spans;
  }
  // The first build's nodes lie on 58 spans of 64 KiB; the next two find
  // them again (a few more: malloc's own spans, such as this test's set's,
  // take some of the emptied ones). Zones cut from fresh spans only: 156.
  EXPECT_LE(after[2].size(), after[0].size() + after[0].size() / 4)
      << "the heap grew from " << after[0].size() << " to " << after[1].size() << " and "
      << after[2].size() << " spans of 64 KiB over two more builds of the same tree";
}

TEST(CApiHints, ATreeHintWhoseParentLinksLoopIsPlacedWithoutItsPath) {
  requireAutoPolicy();
  static int container;
  // A crowd of nodes (no room beside the anchor), two of them naming each
  // other as parent: a walk to the root would never end.
  std::vector<RbNode *> crowd;
  for (int i = 0; i < 256; ++i)
    crowd.push_back(static_cast<RbNode *>(defero_malloc(sizeof(RbNode) + 16)));
  RbNode *a = crowd[128], *b = crowd[129];
  *a = RbNode{0, b, nullptr, nullptr};
  *b = RbNode{0, a, a, nullptr};
  const Stats s0 = stats();
  for (int i = 0; i < 64; ++i) {
    __defero_hint_tree(&container, a, i & 1);
    void *p = defero_malloc(sizeof(RbNode) + 16);
    ASSERT_NE(p, nullptr);
    crowd.push_back(static_cast<RbNode *>(p));
  }
  EXPECT_EQ(num(stats(), "hinted_allocs") - num(s0, "hinted_allocs"), 64);
  EXPECT_EQ(a->parent, b) << "the nodes were only read";
  EXPECT_EQ(b->parent, a);
  for (RbNode *n : crowd)
    defero_free(n);
}

// push_back after push_back takes the slot right above the tail without
// testing it against the span's last slot: the bitmap's word after the
// last is always 0 (taken). A list of 16-byte blocks (4,096 slots a span:
// the slot above the last is that word's first) crosses many spans' ends.
TEST(CApiHints, AContinuationStopsAtItsSpansLastSlot) {
  requireAutoPolicy();
  static void *header[2];
  std::vector<void *> nodes;
  const void *prev = header;
  for (int i = 0; i < 20000; ++i) {
    void *p = __defero_new_hinted(16, 1, header, prev, 0);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x5A, 16);
    nodes.push_back(p);
    prev = p;
  }
  std::vector<void *> sorted = nodes;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i)
    ASSERT_GE(addr(sorted[i]) - addr(sorted[i - 1]), 16u) << "two nodes share a slot";
  std::size_t ends = 0, next = 0; // spans' last slots taken; links that go on in address order
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    ASSERT_EQ(defero_usable_size(nodes[i]), 16u);
    ends += (addr(nodes[i]) & 0xFFFF) == 0xFFF0;
    next += i + 1 < nodes.size() && addr(nodes[i + 1]) == addr(nodes[i]) + 16;
  }
  EXPECT_GE(ends, 3u) << "the list filled fewer than three spans to their end";
  EXPECT_GT(next, nodes.size() * 9 / 10) << "the continuation did not run";
  for (void *p : nodes) {
    ASSERT_EQ(static_cast<unsigned char *>(p)[15], 0x5A);
    defero_free(p);
  }
}

TEST(CApiHints, FusedHintedNew) {
  requireAutoPolicy();
  Room r;
  makeRoom(r);
  ASSERT_NE(r.a, nullptr);
  static int container;
  insertedLastInto(&container);
  const long long h0 = num(stats(), "hinted_allocs");
  void *p = __defero_new_hinted(kNode, 1, &container, r.a, 0);
  EXPECT_EQ(defero_class_of(p), r.class_a);
  EXPECT_EQ(num(stats(), "hinted_allocs"), h0 + 1);
  void *q = __defero_new_hinted(kNode, 42, &container, r.a, 0);
  EXPECT_NE(q, nullptr) << "an unknown kind is an unhinted allocation";
  EXPECT_EQ(num(stats(), "hinted_allocs"), h0 + 1);
  EXPECT_THROW(__defero_new_hinted(std::size_t{1} << 62, 1, &container, r.a, 0), std::bad_alloc);
  void *after = defero_malloc(kNode);
  EXPECT_EQ(num(stats(), "hinted_allocs"), h0 + 1) << "a failed hinted new used up its hint";
  for (void *x : {p, q, after})
    r.held.push_back(x);
}

namespace {

/// A std::list-like chain built by push_back through the fused entry (or
/// the one-shot hint and defero_malloc): libstdc++'s {next, prev} links,
/// the header at `head`.
std::vector<void **> pushBackChain(void *head[2], std::size_t n, std::size_t size, bool fused) {
  std::vector<void **> nodes;
  void **tail = reinterpret_cast<void **>(head);
  for (std::size_t i = 0; i < n; ++i) {
    void **p;
    if (i == 0) {
      p = static_cast<void **>(__defero_new_hinted(size, 3, head, nullptr, 0));
    } else if (fused) {
      p = static_cast<void **>(__defero_new_hinted(size, 1, head, tail, 0));
    } else {
      __defero_hint_neighbor(head, tail);
      p = static_cast<void **>(defero_malloc(size));
    }
    EXPECT_NE(p, nullptr);
    p[0] = head;
    p[1] = tail;
    tail[0] = p;
    head[1] = p;
    tail = p;
    nodes.push_back(p);
  }
  return nodes;
}

} // namespace

// A push_back after push_back takes the slot right above the tail (the
// hinted fast path's first case) and counts one hint, one hinted
// allocation and one allocation, whichever way the hint came.
TEST(CApiHints, PushBackAfterPushBackGoesRightAboveTheTailAndCountsOnce) {
  requireAutoPolicy();
  constexpr std::size_t kSize = 48, kNodes = 300;
  for (bool fused : {true, false}) {
    SCOPED_TRACE(fused ? "fused" : "one-shot hint");
    static void *head[2];
    head[0] = head[1] = head;
    const Stats s0 = stats();
    std::vector<void **> nodes = pushBackChain(head, kNodes, kSize, fused);
    const Stats s1 = stats();
    std::size_t above = 0, slot = defero_usable_size(nodes[0]);
    for (std::size_t i = 1; i < nodes.size(); ++i)
      above += addr(nodes[i]) == addr(nodes[i - 1]) + slot;
    // Every node but where a span or a taken slot breaks the run.
    EXPECT_GE(above, kNodes - 10) << "push_back did not go right above the tail";
    EXPECT_EQ(num(s1, "allocs") - num(s0, "allocs"), static_cast<long long>(kNodes));
    EXPECT_EQ(num(s1, "hints.neighbor") - num(s0, "hints.neighbor"),
              static_cast<long long>(kNodes - 1));
    EXPECT_EQ(num(s1, "hints.container") - num(s0, "hints.container"), 1);
    const long long hinted = num(s1, "hinted_allocs") - num(s0, "hinted_allocs");
    const long long same = num(s1, "hint_same_class") - num(s0, "hint_same_class");
    EXPECT_EQ(hinted, static_cast<long long>(kNodes));
    // Same K-class as the tail except where the run crosses into the next.
    const long long crossings = static_cast<long long>(kNodes * slot / classBytes()) + 2;
    EXPECT_LE(same, hinted - 1) << "the first node has no anchor";
    EXPECT_GE(same, hinted - 1 - crossings);
    EXPECT_EQ(num(s1, "live_bytes") - num(s0, "live_bytes"),
              static_cast<long long>(kNodes * slot));
    for (void **p : nodes)
      defero_free(p);
    const Stats s2 = stats();
    EXPECT_EQ(num(s2, "frees") - num(s1, "frees"), static_cast<long long>(kNodes));
    EXPECT_EQ(num(s2, "live_bytes"), num(s0, "live_bytes"));
  }
}

// The hinted fast path counts nothing per node: a streak of push_backs
// right above the tail is counted when it ends (or when stats are read).
// One-shot and fused hints in one streak, a streak across K-class
// boundaries and one ended by the next container's insert still count each
// hint, hinted allocation and same-class node exactly once.
TEST(CApiHints, StreaksOfPushBacksCountEachHintOnceAndEachClassCrossing) {
  requireAutoPolicy();
  constexpr std::size_t kSize = 48, kNodes = 600;
  static void *head[2], *other[2];
  head[0] = head[1] = head;
  other[0] = other[1] = other;
  const Stats s0 = stats();
  std::vector<void **> nodes;
  void **tail = reinterpret_cast<void **>(head);
  long long oneshot = 0, fused = 0, same = 0, above = 0;
  const std::uintptr_t cb = classBytes();
  for (std::size_t i = 0; i < kNodes; ++i) {
    void **p;
    if (i == 0) {
      p = static_cast<void **>(__defero_new_hinted(kSize, 3, head, nullptr, 0));
    } else if (i % 3 == 0) {
      __defero_hint_neighbor(head, tail);
      p = static_cast<void **>(defero_malloc(kSize));
      ++oneshot;
    } else {
      p = static_cast<void **>(__defero_new_hinted(kSize, 1, head, tail, 0));
      ++fused;
    }
    ASSERT_NE(p, nullptr);
    if (i > 0) {
      same += addr(p) / cb == addr(tail) / cb;
      above += addr(p) == addr(tail) + defero_usable_size(tail);
    }
    p[0] = head;
    p[1] = tail;
    tail[0] = p;
    head[1] = p;
    tail = p;
    nodes.push_back(p);
    if (i == kNodes / 2) { // read mid-streak
      const Stats mid = stats();
      EXPECT_EQ(num(mid, "hinted_allocs") - num(s0, "hinted_allocs"),
                static_cast<long long>(i + 1));
      EXPECT_EQ(num(mid, "hints.neighbor") - num(s0, "hints.neighbor"),
                static_cast<long long>(i));
    }
  }
  // The next container's first node ends the streak.
  void *o = __defero_new_hinted(kSize, 3, other, nullptr, 0);
  ASSERT_NE(o, nullptr);
  const Stats s1 = stats();
  EXPECT_GE(above, static_cast<long long>(kNodes) - 10) << "no streak to count";
  EXPECT_EQ(num(s1, "allocs") - num(s0, "allocs"), static_cast<long long>(kNodes + 1));
  EXPECT_EQ(num(s1, "hints.neighbor") - num(s0, "hints.neighbor"), oneshot + fused);
  EXPECT_EQ(num(s1, "hints.container") - num(s0, "hints.container"), 2);
  EXPECT_EQ(num(s1, "hinted_allocs") - num(s0, "hinted_allocs"),
            static_cast<long long>(kNodes + 1));
  EXPECT_LT(same, static_cast<long long>(kNodes) - 1) << "the chain crossed no K-class";
  EXPECT_EQ(num(s1, "hint_same_class") - num(s0, "hint_same_class"), same);
  for (void **p : nodes)
    defero_free(p);
  defero_free(o);
  EXPECT_EQ(num(stats(), "live_bytes"), num(s0, "live_bytes"));
}

// A list that grows at both ends (push_back and push_front in turn) keeps
// each end in contiguous memory across many spans: the back's runs lie end
// to end going up, the front's going down, so a walk in list order steps
// to the adjacent slot except where one span ends and the next begins.
// (The front's nodes, placed below their neighbour, take the free slots
// below the run they are in; the next run must start below those, not
// give up and hand out an unhinted slot.)
TEST(CApiHints, AListGrowingAtBothEndsWalksUpItsRunsAcrossSpans) {
  requireAutoPolicy();
  constexpr std::size_t kSize = 48, kNodes = 12000; // about 9 spans of 48 B slots
  static void *head[2];
  head[0] = head[1] = head;
  std::vector<void **> nodes;
  for (std::size_t i = 0; i < kNodes; ++i) {
    const bool back = i % 2 == 0;
    void **p;
    if (i == 0)
      p = static_cast<void **>(__defero_new_hinted(kSize, 3, head, nullptr, 0));
    else
      p = static_cast<void **>(
          __defero_new_hinted(kSize, 1, head, back ? head[1] : head[0], 0));
    ASSERT_NE(p, nullptr);
    if (back) { // {next, prev}: after the tail
      p[0] = head;
      p[1] = head[1];
      static_cast<void **>(head[1])[0] = p;
      head[1] = p;
    } else { // before the first node
      p[0] = head[0];
      p[1] = head;
      static_cast<void **>(head[0])[1] = p;
      head[0] = p;
    }
    nodes.push_back(p);
  }
  const std::size_t slot = defero_usable_size(nodes[0]);
  std::size_t adjacent = 0, steps = 0;
  for (void **p = static_cast<void **>(head[0]); p[0] != head; p = static_cast<void **>(p[0])) {
    ++steps;
    const std::uintptr_t a = addr(p), b = addr(p[0]);
    adjacent += (b > a ? b - a : a - b) <= 128; // the same or the next line
  }
  ASSERT_EQ(steps, kNodes - 1);
  const std::size_t spans = kNodes * slot / 65536 + 2;
  EXPECT_GE(adjacent, steps - 2 * spans - 8)
      << "a walk in list order left the runs " << steps - adjacent << " times";
  for (void **p : nodes)
    defero_free(p);
}

// A program that builds and frees the same containers again and again
// (the kernels' repetitions: warm the heap with 2N blocks, free a random
// half, build a list of N, free everything) reuses its memory: a span whose
// last block is freed goes to its class's Empty list, and the next list's
// runs (and the next Current) take it before fresh memory. Before, the
// runs found only the first few Avail spans, half used by the warm-up, and
// every repetition carved fresh spans (the kernel's peak RSS 63 -> 206 MB
// over 5 repetitions).
TEST(CApiHints, RebuildingAListReusesTheSpansItsLastBuildFreed) {
  requireAutoPolicy();
  constexpr std::size_t kSize = 48, kNodes = 20000; // about 15 spans a list
  std::set<std::uintptr_t> spans_after[3];
  std::set<std::uintptr_t> spans;
  std::uint64_t rng = 12345;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<void *> warm(2 * kNodes);
    for (auto &p : warm) {
      p = defero_malloc(kSize);
      ASSERT_NE(p, nullptr);
      spans.insert(addr(p) >> 16);
    }
    for (std::size_t i = warm.size() - 1; i > 0; --i) { // a shuffle
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      std::swap(warm[i], warm[(rng >> 33) % (i + 1)]);
    }
    for (std::size_t i = 0; i < kNodes; ++i)
      defero_free(warm[i]);
    static void *head[2];
    head[0] = head[1] = head;
    std::vector<void **> nodes;
    for (std::size_t i = 0; i < kNodes; ++i) {
      void **p = static_cast<void **>(
          i == 0 ? __defero_new_hinted(kSize, 3, head, nullptr, 0)
                 : __defero_new_hinted(kSize, 1, head, head[1], 0));
      ASSERT_NE(p, nullptr);
      p[0] = head;
      p[1] = head[1];
      static_cast<void **>(head[1])[0] = p;
      head[1] = p;
      nodes.push_back(p);
      spans.insert(addr(p) >> 16);
    }
    for (void **p : nodes)
      defero_free(p);
    for (std::size_t i = kNodes; i < warm.size(); ++i)
      defero_free(warm[i]);
    spans_after[rep] = spans;
  }
  // The first repetition needs about 2N + N blocks' spans (45); the others
  // find them again (a few more: the warm-up's random half).
  EXPECT_LE(spans_after[2].size(), spans_after[0].size() + 4)
      << "the heap grew from " << spans_after[0].size() << " to " << spans_after[2].size()
      << " spans of 64 KiB over two more repetitions";
}

// Slab colouring (PageArena::colourBytes): the first slot of a span lies 0
// to 7 times 128 bytes above the span's start, by the span's place in the
// window, so that the spans' first lines do not all fall in the same cache
// sets. Slots keep the alignment their class serves (a 64 B slot is 64 B
// aligned), and a hint whose anchor lies in a span's colour, below its
// first slot (a bogus or stale anchor), places nothing out of bounds
// (before the slot index was clamped, ThreadSanitizer's driver read past a
// span's bitmap there).
TEST(CApiSpans, SpansStartTheirSlotsAtSeveralColours) {
  constexpr std::size_t kSize = 64, kSpan = std::size_t{1} << 16;
  std::vector<void *> blocks;
  std::map<std::uintptr_t, std::uintptr_t> lowest; // span -> its lowest block
  for (std::size_t i = 0; i < 24 * kSpan / kSize; ++i) {
    void *p = defero_malloc(kSize);
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(addr(p) % kSize, 0u) << "a 64 B slot lost its alignment";
    blocks.push_back(p);
    auto [it, fresh] = lowest.try_emplace(addr(p) & ~(kSpan - 1), addr(p));
    if (!fresh && addr(p) < it->second)
      it->second = addr(p);
  }
  std::set<std::uintptr_t> colours;
  for (const auto &[span, low] : lowest)
    colours.insert(low - span);
  EXPECT_GE(colours.size(), 4u) << "the spans' first slots share " << colours.size()
                                << " offsets from their span's start";
  for (std::uintptr_t c : colours)
    EXPECT_LT(c, 8u * 128) << "a colour past 7 x 128 bytes";
  static int container;
  for (const auto &[span, low] : lowest) {
    const void *gap = reinterpret_cast<const void *>(span); // below the first slot, or it
    __defero_hint_neighbor(&container, gap);
    void *a = defero_malloc(kSize);
    void *b = __defero_new_hinted(kSize, 1, &container, gap, 0);
    __defero_hint_tree(&container, gap, 1);
    void *c = defero_malloc(kSize);
    for (void *p : {a, b, c}) {
      ASSERT_NE(p, nullptr);
      EXPECT_GE(defero_usable_size(p), kSize);
      blocks.push_back(p);
    }
  }
  for (void *p : blocks)
    defero_free(p);
}

// A program whose allocation sizes shift reuses the spans its earlier
// sizes emptied: an Empty span of one class is made over for another whose
// spans are as long (PageArena::remake), before fresh memory is carved.
// Before, every class kept its own high-water mark (soak_phases: peak
// resident 1,992 MB against glibc's 377).
TEST(CApiSpans, ASizeShiftReusesTheSpansTheLastSizeEmptied) {
  constexpr std::size_t kSmall = 48, kLarge = 96, kBytes = std::size_t{3} << 20;
  std::set<std::uintptr_t> first_spans;
  std::vector<void *> blocks;
  for (std::size_t i = 0; i < kBytes / kSmall; ++i) {
    blocks.push_back(defero_malloc(kSmall));
    ASSERT_NE(blocks.back(), nullptr);
    first_spans.insert(addr(blocks.back()) >> 16);
  }
  for (void *p : blocks)
    defero_free(p);
  blocks.clear();
  std::size_t reused = 0, fresh = 0;
  for (std::size_t i = 0; i < kBytes / kLarge; ++i) {
    void *p = defero_malloc(kLarge);
    ASSERT_NE(p, nullptr);
    ASSERT_GE(defero_usable_size(p), kLarge);
    std::memset(p, static_cast<int>(i & 0xFF), kLarge);
    blocks.push_back(p);
    (first_spans.count(addr(p) >> 16) ? reused : fresh) += 1;
  }
  // About 47 spans of 48 B slots emptied (a few keep a block on the free
  // stack or a cached word); the 96 B blocks need as many.
  EXPECT_GE(reused, blocks.size() * 3 / 4)
      << fresh << " of " << blocks.size() << " blocks of " << kLarge
      << " B went to fresh spans while the 48 B spans lay empty";
  // The made-over spans hand out whole, distinct blocks that keep their
  // contents.
  std::vector<void *> sorted = blocks;
  std::sort(sorted.begin(), sorted.end());
  for (std::size_t i = 1; i < sorted.size(); ++i)
    ASSERT_GE(addr(sorted[i]) - addr(sorted[i - 1]), kLarge) << "blocks overlap";
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto *b = static_cast<const unsigned char *>(blocks[i]);
    ASSERT_EQ(b[0], i & 0xFF);
    ASSERT_EQ(b[kLarge - 1], i & 0xFF);
  }
  for (void *p : blocks)
    defero_free(p);
}

/// Whether this process runs with the environment variable `var` set to
/// `value` (the suites that need one run in a process of their own, with
/// ctest setting it; elsewhere they skip).
bool runsWith(const char *var, const char *value) {
  const char *v = std::getenv(var);
  return v && std::strcmp(v, value) == 0;
}

// Pages of [p, p + bytes) resident now.
std::size_t residentPages(const void *p, std::size_t bytes) {
  std::vector<unsigned char> vec((bytes + (addr(p) & 4095) + 4095) / 4096);
  void *page = reinterpret_cast<void *>(addr(p) & ~std::uintptr_t{4095});
  if (mincore(page, bytes + (addr(p) & 4095), vec.data()) != 0) {
    ADD_FAILURE() << "mincore failed on " << p;
    return 0;
  }
  std::size_t n = 0;
  for (unsigned char c : vec)
    n += c & 1;
  return n;
}

// Pages of the 64 KiB spans holding these blocks that are resident now.
std::size_t residentPagesOf(const std::vector<std::uintptr_t> &spans) {
  std::size_t n = 0;
  for (std::uintptr_t sp : spans)
    n += residentPages(reinterpret_cast<void *>(sp << 16), 65536);
  return n;
}

/// Spans of one class whose blocks have mostly been freed: `bytes` of
/// blocks of `size` made, then (thin) all but one in every 16 KiB freed
/// (each span keeps 4 of its 16 pages), the survivors filled with their
/// number.
struct PartlyUsedSpans {
  std::size_t size;
  std::vector<unsigned char *> blocks, keep, gone;
  std::vector<std::uintptr_t> spans;
  PartlyUsedSpans(std::size_t block, std::size_t bytes) : size(block) {
    std::set<std::uintptr_t> in;
    for (std::size_t i = 0; i < bytes / size; ++i) {
      auto *p = static_cast<unsigned char *>(defero_malloc(size));
      EXPECT_NE(p, nullptr);
      std::memset(p, 0x11, size);
      blocks.push_back(p);
      in.insert(addr(p) >> 16);
    }
    spans.assign(in.begin(), in.end());
  }
  /// Frees the others in a scrambled order (the class's free stack, 64 KiB
  /// of the blocks freed first, keeps their pages in use), or with
  /// `in_order` in the order they were made (the stacked blocks fill the
  /// first span).
  PartlyUsedSpans &thin(bool in_order = false) {
    for (unsigned char *p : blocks)
      ((addr(p) & 0x3FFF) < size ? keep : gone).push_back(p);
    std::mt19937 rng(7);
    if (!in_order)
      std::shuffle(gone.begin(), gone.end(), rng);
    for (unsigned char *p : gone)
      defero_free(p);
    for (std::size_t i = 0; i < keep.size(); ++i)
      std::memset(keep[i], static_cast<int>(i & 0xFF), size);
    return *this;
  }
  std::size_t pages() const { return spans.size() * 16; }
  std::size_t resident() const { return residentPagesOf(spans); }
  /// Checks the blocks that lived on kept their contents.
  void check() const {
    for (std::size_t i = 0; i < keep.size(); ++i)
      for (std::size_t b = 0; b < size; ++b)
        ASSERT_EQ(keep[i][b], static_cast<unsigned char>(i & 0xFF)) << "block " << i << " byte " << b;
  }
  void checkAndFree() {
    check();
    for (unsigned char *p : keep)
      defero_free(p);
  }
};

namespace {
/// Eight blocks of 256 KiB of the thread's mid heap (kept apart by live
/// blocks), written and freed: resident free runs, freed just now (their
/// delay has not passed). A block of their length freed first takes the
/// mid heap's at-once release (the first freed block of 64 KiB or more,
/// and then only longer ones: MidHeap::kReleaseFrom), so theirs stay.
struct FreedMidBlocks {
  static constexpr std::size_t kBlock = 256 << 10, kBlocks = 8;
  static constexpr std::size_t kPages = kBlocks * kBlock / 4096;
  std::vector<char *> blocks, guards;
  FreedMidBlocks() {
    defero_free(defero_malloc(kBlock));
    for (std::size_t i = 0; i < kBlocks; ++i) {
      blocks.push_back(static_cast<char *>(defero_malloc(kBlock)));
      guards.push_back(static_cast<char *>(defero_malloc(40000)));
      EXPECT_TRUE(blocks.back() && guards.back());
      std::memset(blocks.back(), 1, kBlock);
    }
    for (char *b : blocks)
      defero_free(b);
    EXPECT_GE(resident(), kPages * 9 / 10) << "freed runs went back at once";
  }
  ~FreedMidBlocks() {
    for (char *g : guards)
      defero_free(g);
  }
  /// Their pages still resident.
  std::size_t resident() const {
    std::size_t n = 0;
    for (char *b : blocks)
      n += residentPages(b, kBlock);
    return n;
  }
};

/// n blocks of `size`, block i filled with i's low byte.
std::vector<unsigned char *> madeAndFilled(std::size_t size, std::size_t n) {
  std::vector<unsigned char *> made;
  for (std::size_t i = 0; i < n; ++i) {
    auto *p = static_cast<unsigned char *>(defero_malloc(size));
    EXPECT_NE(p, nullptr);
    if (!p)
      break;
    std::memset(p, static_cast<int>(i & 0xFF), size);
    made.push_back(p);
  }
  return made;
}
/// Checks the last byte of each of madeAndFilled's blocks, and frees them.
void checkAndFreeFilled(const std::vector<unsigned char *> &made, std::size_t size) {
  for (std::size_t i = 0; i < made.size(); ++i)
    EXPECT_EQ(made[i][size - 1], static_cast<unsigned char>(i & 0xFF)) << "block " << i;
  for (unsigned char *p : made)
    defero_free(p);
}
} // namespace

/// Fills 3 MiB with 48 B blocks, frees them, and returns the spans they
/// were in.
std::vector<std::uintptr_t> fillAndFree48() {
  std::set<std::uintptr_t> spans;
  std::vector<void *> blocks;
  for (std::size_t i = 0; i < (std::size_t{3} << 20) / 48; ++i) {
    void *p = defero_malloc(48);
    EXPECT_NE(p, nullptr);
    std::memset(p, 0x5A, 48);
    blocks.push_back(p);
    spans.insert(addr(p) >> 16);
  }
  for (void *p : blocks)
    defero_free(p);
  return {spans.begin(), spans.end()};
}

/// A number of the stats JSON (-1 if missing).
long long statsKey(const char *key) {
  char path[] = "/tmp/defero_decay_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0)
    return -1;
  FILE *f = fdopen(fd, "w+");
  long long v = -1;
  if (f && defero_stats_json(f) == 0) {
    std::rewind(f);
    char buf[2048] = {};
    const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    const std::string quoted = std::string("\"") + key + "\": ";
    if (const char *k = std::strstr(buf, quoted.c_str()))
      v = std::atoll(k + quoted.size());
  }
  if (f)
    std::fclose(f);
  std::remove(path);
  return v;
}
/// The released_bytes key of the stats JSON.
long long releasedBytes() { return statsKey("released_bytes"); }

// Eight freed blocks of 256 KiB of the thread's mid heap (free runs kept
// apart by live blocks), then a block longer than any of them, which
// grows the slice's top by 4 MiB: the pages of the freed blocks still
// resident after the growth (before it, at least 90% were), and the
// released_bytes the growth added.
struct TopGrowth {
  static constexpr std::size_t kPages = FreedMidBlocks::kPages;
  std::size_t resident = 0;
  long long released = 0;
  void run() {
    FreedMidBlocks freed;
    const long long before = releasedBytes();
    auto *big = static_cast<char *>(defero_malloc(4 << 20));
    ASSERT_NE(big, nullptr);
    resident = freed.resident();
    released = releasedBytes() - before;
    // Reused, they are memory as any other.
    auto *again = static_cast<char *>(defero_malloc(FreedMidBlocks::kBlock));
    ASSERT_NE(again, nullptr);
    std::memset(again, 2, FreedMidBlocks::kBlock);
    defero_free(again);
    defero_free(big);
  }
};

/// The live_bytes key.
long long liveBytes() { return statsKey("live_bytes"); }

// An Empty span keeps its memory for DEFERO_DECAY_MS (100 ms by default:
// a program that frees and builds again at once does not fault its pages
// back), then gives it back to the OS when its heap next passes a slow path
// (a span emptied or needed): the pages read back as zero when taken again.
TEST(CApiDecay, EmptySpansKeepTheirMemoryForTheDelayThenGiveItBack) {
  const std::vector<std::uintptr_t> spans = fillAndFree48();
  const std::size_t pages = spans.size() * 16;
  const std::size_t right_after = residentPagesOf(spans);
  EXPECT_GE(right_after, pages * 9 / 10) << "given back before the delay";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // A slow path: blocks of another class need spans.
  std::vector<void *> other;
  for (int i = 0; i < 2000; ++i)
    other.push_back(defero_malloc(512));
  const std::size_t after = residentPagesOf(spans);
  EXPECT_LE(after, pages / 4) << after << " of " << pages
                              << " pages still resident 300 ms after their spans emptied";
  EXPECT_GE(releasedBytes(), 1 << 20);
  for (void *p : other)
    defero_free(p);
  // Taken again: zeroed pages, whole blocks.
  std::vector<void *> again;
  for (int i = 0; i < 20000; ++i) {
    auto *p = static_cast<unsigned char *>(defero_malloc(48));
    ASSERT_NE(p, nullptr);
    std::memset(p, i & 0xFF, 48);
    again.push_back(p);
  }
  for (int i = 0; i < 20000; ++i)
    ASSERT_EQ(static_cast<unsigned char *>(again[i])[47], i & 0xFF);
  for (void *p : again)
    defero_free(p);
}

// A span whose blocks have mostly been freed keeps the pages its busiest
// moment touched unless they go back one by one: when the heap grows (a
// fresh span), the OS pages of its partly used spans that hold no block
// go back first, as much as it grows (SpanHeap::trimIdle), and the blocks
// that live on in those spans keep their contents.
TEST(CApiDecay, APartlyUsedSpansIdlePagesGoBackWhenTheHeapGrows) {
  PartlyUsedSpans sparse(176, std::size_t{8} << 20);
  sparse.thin();
  const std::size_t pages = sparse.pages();
  const std::size_t before = sparse.resident();
  const long long released_before = releasedBytes();
  ASSERT_GE(before, pages * 9 / 10) << "the spans were never touched whole";
  // The heap grows: 8 MiB of blocks of another class, in fresh spans (a
  // class too small to lie over the freed slots: a block of 1 KiB would,
  // SpanHeap::gangMalloc).
  std::vector<void *> other;
  for (int i = 0; i < 131072; ++i) {
    other.push_back(defero_malloc(64));
    ASSERT_NE(other.back(), nullptr);
  }
  const std::size_t after = sparse.resident();
  // A quarter of the pages hold a block; the class's free stack (64 KiB
  // of the blocks freed last) keeps up to 372 more in use.
  EXPECT_LE(after, pages / 4 + 372 + pages / 16)
      << after << " of " << pages << " pages still resident; about a quarter hold a block";
  EXPECT_GE(after, sparse.keep.size()) << "a page holding a live block was given back";
  EXPECT_GE(releasedBytes() - released_before,
            static_cast<long long>((before - after) * 4096 / 2));
  sparse.check();
  // Taken again: the pages come back zeroed, the blocks whole, and
  // released_bytes falls back.
  std::vector<unsigned char *> again;
  for (std::size_t i = 0; i < sparse.gone.size(); ++i) {
    auto *p = static_cast<unsigned char *>(defero_malloc(sparse.size));
    ASSERT_NE(p, nullptr);
    std::memset(p, static_cast<int>(i & 0xFF), sparse.size);
    again.push_back(p);
  }
  for (std::size_t i = 0; i < again.size(); ++i)
    ASSERT_EQ(again[i][sparse.size - 1], static_cast<unsigned char>(i & 0xFF));
  for (unsigned char *p : again)
    defero_free(p);
  sparse.checkAndFree();
  for (void *p : other)
    defero_free(p);
}

// Under DEFERO_DECAY_MS=never a mid heap whose top grows keeps its idle
// runs resident.
TEST(CApiDecayNever, AMidHeapThatGrowsKeepsItsIdleRuns) {
  if (!runsWith("DEFERO_DECAY_MS", "never"))
    GTEST_SKIP() << "run by ctest with DEFERO_DECAY_MS=never";
  TopGrowth t;
  t.run();
  EXPECT_GE(t.resident, TopGrowth::kPages * 9 / 10) << "idle runs went back under never";
  EXPECT_EQ(t.released, 0);
}

// Under DEFERO_DECAY_MS=never no idle page of a partly used span goes back
// when the heap grows.
TEST(CApiDecayNever, APartlyUsedSpansIdlePagesStayWhenTheHeapGrows) {
  if (!runsWith("DEFERO_DECAY_MS", "never"))
    GTEST_SKIP() << "run by ctest with DEFERO_DECAY_MS=never";
  constexpr std::size_t kSize = 176, kBlocks = (std::size_t{4} << 20) / kSize;
  std::vector<unsigned char *> blocks, keep;
  std::set<std::uintptr_t> spans;
  for (std::size_t i = 0; i < kBlocks; ++i) {
    blocks.push_back(static_cast<unsigned char *>(defero_malloc(kSize)));
    std::memset(blocks.back(), 0x11, kSize);
    spans.insert(addr(blocks.back()) >> 16);
  }
  for (unsigned char *p : blocks)
    if ((addr(p) & 0x3FFF) < kSize)
      keep.push_back(p);
    else
      defero_free(p);
  const std::vector<std::uintptr_t> span_list(spans.begin(), spans.end());
  const std::size_t before = residentPagesOf(span_list);
  std::vector<void *> other; // (as above: a class too small to lie over the freed slots)
  for (int i = 0; i < 65536; ++i)
    other.push_back(defero_malloc(64));
  EXPECT_EQ(residentPagesOf(span_list), before);
  EXPECT_EQ(releasedBytes(), 0);
  for (void *p : other)
    defero_free(p);
  for (unsigned char *p : keep)
    defero_free(p);
}

// Under DEFERO_DECAY_MS=never a class that grows by fresh spans keeps the
// mid heap's idle runs resident.
TEST(CApiDecayNever, AGrowingClassKeepsTheMidHeapsIdleRuns) {
  if (!runsWith("DEFERO_DECAY_MS", "never"))
    GTEST_SKIP() << "run by ctest with DEFERO_DECAY_MS=never";
  FreedMidBlocks mid;
  std::vector<unsigned char *> grow = madeAndFilled(48, (std::size_t{2} << 20) / 48);
  EXPECT_GE(mid.resident(), FreedMidBlocks::kPages * 9 / 10) << "idle runs went back under never";
  EXPECT_EQ(releasedBytes(), 0);
  checkAndFreeFilled(grow, 48);
}

// A neighbour hint may name a node the program has freed (the runtime
// trusts the anchor): a placement beside it takes a slot of an Empty span.
// That span's memory must not go back to the OS while the block lives.
TEST(CApiDecay, ABlockPlacedInAnEmptySpanKeepsItsContents) {
  requireAutoPolicy();
  std::vector<void *> blocks;
  for (std::size_t i = 0; i < (std::size_t{3} << 20) / 48; ++i)
    blocks.push_back(defero_malloc(48));
  // The last blocks freed go to their spans' bitmaps (the free stack is
  // full by then): their spans empty.
  for (void *p : blocks)
    defero_free(p);
  void *stale = blocks[blocks.size() - 100];
  static char container[64];
  insertedLastInto(container, 48); // (a node of another size might take the Empty span)
  auto *b = static_cast<unsigned char *>(__defero_new_hinted(48, 1, container, stale, 0));
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(addr(b) >> 16, addr(stale) >> 16) << "not placed in the stale anchor's span";
  std::memset(b, 0xA7, 48);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::vector<void *> other; // a slow path: decay runs
  for (int i = 0; i < 2000; ++i)
    other.push_back(defero_malloc(512));
  for (int i = 0; i < 48; ++i)
    ASSERT_EQ(b[i], 0xA7) << "byte " << i << " of a live block was given back to the OS";
  for (void *p : other)
    defero_free(p);
  defero_free(b);
}

// --- gangs: a growing class's blocks over another class's free slots ------
//
// Each in its own process (CApiFreshHeap): a fresh heap whose only spans
// are the test's. 64 B blocks fill 64 spans; all but every 8th are freed,
// leaving runs of 7 free slots between survivors. Blocks of 256 B then
// find no span of their class, and the heap would grow: each lies over 5
// of the free 64 B slots instead (a 16-byte header in the first), 16
// bytes past a slot start.

namespace {
struct SparseSpans {
  std::vector<unsigned char *> keep;
  std::set<std::uintptr_t> spans;
  SparseSpans() {
    std::vector<unsigned char *> all;
    for (int i = 0; i < 64 * 1024; ++i) {
      auto *p = static_cast<unsigned char *>(defero_malloc(64));
      all.push_back(p);
      spans.insert(addr(p) >> 16);
    }
    for (std::size_t i = 0; i < all.size(); ++i)
      if (i % 8 == 0) {
        std::memset(all[i], static_cast<int>(i / 8 & 0xFF), 64);
        keep.push_back(all[i]);
      } else {
        defero_free(all[i]);
      }
  }
  bool holds(const void *p) const { return spans.count(addr(p) >> 16) != 0; }
  /// Makes n blocks of `size` bytes, then frees them: how many lay in the
  /// spans.
  std::size_t madeHere(std::size_t size, int n) const {
    std::vector<void *> made;
    std::size_t here = 0;
    for (int i = 0; i < n; ++i) {
      made.push_back(defero_malloc(size));
      here += holds(made.back());
    }
    for (void *p : made)
      defero_free(p);
    return here;
  }
  void checkAndFree() {
    for (std::size_t i = 0; i < keep.size(); ++i) {
      for (int b = 0; b < 64; ++b)
        ASSERT_EQ(keep[i][b], static_cast<unsigned char>(i & 0xFF)) << "survivor " << i;
      defero_free(keep[i]);
    }
  }
};
} // namespace

TEST(CApiFreshHeap, AGrowingClasssBlocksLieOverAnotherClasssFreeSlots) {
  SparseSpans sparse;
  const long long live_before = liveBytes();
  std::vector<unsigned char *> big;
  std::size_t over = 0;
  for (int i = 0; i < 4096; ++i) {
    auto *p = static_cast<unsigned char *>(defero_malloc(256));
    ASSERT_NE(p, nullptr);
    ASSERT_EQ(addr(p) % 16, 0u);
    std::memset(p, i & 0xFF, 256);
    over += sparse.holds(p);
    big.push_back(p);
  }
  // The 8,192 runs hold them all (but the free stack's and cached word's
  // slots, which are not free in the bitmaps).
  EXPECT_GE(over, 4096u * 9 / 10) << "of 4096 blocks of 256 B, " << over
                                  << " in the 64 B spans";
  for (unsigned char *p : big)
    if (sparse.holds(p)) {
      EXPECT_EQ(addr(p) % 64, 16u) << "a gang's block lies 16 bytes past a slot start";
      EXPECT_EQ(defero_usable_size(p), 256u);
    }
  EXPECT_EQ(liveBytes() - live_before, 4096 * 256) << "a gang counts as one block of its class";
  for (std::size_t i = 0; i < big.size(); ++i)
    for (int b = 0; b < 256; ++b)
      ASSERT_EQ(big[i][b], static_cast<unsigned char>(i & 0xFF)) << "block " << i;
  for (unsigned char *p : big)
    defero_free(p);
  EXPECT_EQ(liveBytes(), live_before);
  // Their runs are free 64 B slots again: 64 B blocks take them before
  // any fresh span.
  EXPECT_GE(sparse.madeHere(64, 16384), 16384u * 9 / 10);
  sparse.checkAndFree();
}

// A class whose blocks were freed reuses their slots before it touches
// memory it never used: the words of its Current span that no claim took
// yet wait while another of its spans has free slots
// (SpanHeap::preferTouched). Before, the Current span's fresh words went
// first, and the freed slots' pages stayed resident beside them.
TEST(CApiFreshHeap, AClassReusesFreedSlotsBeforeItTouchesNewMemory) {
  std::vector<unsigned char *> made;
  for (int i = 0; i < 2 * 1024 + 100; ++i) {
    auto *p = static_cast<unsigned char *>(defero_malloc(64));
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x22, 64);
    made.push_back(p);
  }
  // The Current span: the last block's. Its words above the highest block
  // made from it (less the rest of the word its cache holds) were never
  // claimed.
  const std::uintptr_t cur = addr(made.back()) >> 16;
  std::uintptr_t high = 0;
  for (unsigned char *p : made)
    if (addr(p) >> 16 == cur && addr(p) > high)
      high = addr(p);
  // Three of every four blocks of the other spans freed, scrambled: more
  // than the class's free stack holds (64 KiB), so the rest reach their
  // spans' bitmaps.
  std::vector<unsigned char *> keep, gone;
  for (std::size_t i = 0; i < made.size(); ++i)
    (addr(made[i]) >> 16 == cur || i % 4 == 0 ? keep : gone).push_back(made[i]);
  ASSERT_GT(gone.size(), 1024u + 256);
  std::mt19937 rng(3);
  std::shuffle(gone.begin(), gone.end(), rng);
  for (unsigned char *p : gone)
    defero_free(p);
  // As many blocks again: they fit the slots freed.
  std::size_t fresh = 0;
  std::vector<unsigned char *> again;
  for (std::size_t i = 0; i < gone.size(); ++i) {
    auto *p = static_cast<unsigned char *>(defero_malloc(64));
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x33, 64);
    fresh += addr(p) >> 16 == cur && addr(p) > high + 64 * 64;
    again.push_back(p);
  }
  EXPECT_EQ(fresh, 0u) << "of " << gone.size() << " blocks, " << fresh
                       << " in words of the Current span never claimed, while "
                          "freed slots of other spans waited";
  for (unsigned char *p : keep)
    for (int b = 0; b < 64; ++b)
      ASSERT_EQ(p[b], 0x22);
  for (unsigned char *p : keep)
    defero_free(p);
  for (unsigned char *p : again)
    defero_free(p);
}

// A gang holds the bytes asked for, not its class's: 385 B blocks (their
// class 448 B) take 7 of the 64 B slots with the header (448 bytes),
// which the runs of 7 hold; as their class's 448 B (8 slots) none would
// fit. Usable: the run less the header (432); counted as their class's.
// (realloc of such a gang: GlibcSemantics.ReallocCallocAndUsableSizeOfAGangsBlock.)
TEST(CApiFreshHeap, AGangHoldsTheBytesAskedForNotItsClasss) {
  SparseSpans sparse;
  const long long live_before = liveBytes();
  std::vector<unsigned char *> made;
  std::size_t over = 0;
  for (int i = 0; i < 4096; ++i) {
    auto *p = static_cast<unsigned char *>(defero_malloc(385));
    ASSERT_NE(p, nullptr);
    std::memset(p, i & 0xFF, 385);
    if (sparse.holds(p)) {
      ++over;
      EXPECT_EQ(defero_usable_size(p), 7u * 64 - 16) << "a gang's usable size is its run's";
    }
    made.push_back(p);
  }
  EXPECT_GE(over, 4096u * 9 / 10) << "of 4096 blocks of 385 B, " << over << " in the 64 B spans";
  EXPECT_EQ(liveBytes() - live_before, 4096 * 448) << "a gang counts as a block of its class";
  for (std::size_t i = 0; i < made.size(); ++i)
    for (int b = 0; b < 385; ++b)
      ASSERT_EQ(made[i][b], static_cast<unsigned char>(i & 0xFF)) << "block " << i;
  for (unsigned char *p : made)
    defero_free(p);
  EXPECT_EQ(liveBytes(), live_before);
  sparse.checkAndFree();
}

// A span taken to be filled again (Current) whose idle pages a trim gave
// back faults them in as it fills: the heap grows by them, so idle pages
// of other spans go back first, as much (SpanHeap::refaultGone). Without
// it a thread whose old sizes' survivors were being freed kept their idle
// pages resident while it took back the trimmed pages of the spans its
// new sizes had emptied (soak_phases).
TEST(CApiFreshHeap, ASpansTrimmedPagesTakenBackGiveBackIdlePagesElsewhere) {
  // (176 B blocks first: made later, they would lie over the 64 B spans'
  // free slots, SpanHeap::gangMalloc.)
  PartlyUsedSpans other(176, std::size_t{8} << 20);
  PartlyUsedSpans small(64, std::size_t{4} << 20);
  small.thin(true);
  // The heap grows by 4 MiB of 16 B blocks (too small to lie over the
  // freed slots): the 64 B spans' idle pages go back.
  std::vector<void *> grow;
  for (int i = 0; i < (4 << 20) / 16; ++i)
    grow.push_back(defero_malloc(16));
  ASSERT_LE(small.resident(), small.pages() / 2) << "the 64 B spans' idle pages did not go back";
  // The 176 B spans mostly freed: their idle pages are resident.
  other.thin();
  const std::size_t other_before = other.resident(), small_before = small.resident();
  ASSERT_GE(other_before, other.pages() * 9 / 10);
  // 64 B blocks again: they fill the 64 B spans' freed slots, and fault
  // their pages back in.
  const std::vector<unsigned char *> again = madeAndFilled(64, 16384);
  const std::size_t back_in = small.resident() - small_before;
  const std::size_t gone = other_before - other.resident();
  EXPECT_GE(back_in, 128u) << "the 64 B blocks did not go to their spans' trimmed pages";
  EXPECT_GE(gone, back_in / 2) << back_in << " pages faulted back in, " << gone
                               << " idle pages of the 176 B spans given back";
  checkAndFreeFilled(again, 64);
  other.checkAndFree();
  small.checkAndFree();
  for (void *p : grow)
    defero_free(p);
}

// A class with no span of its own with room takes a resident Empty span,
// its own or another class's made over, before an Empty span of its own
// whose memory went back to the OS (which faults in as a fresh span would).
TEST(CApiFreshHeap, AResidentEmptySpanOfAnotherClassBeforeOneThatWentBack) {
  std::set<std::uintptr_t> spans176;
  std::vector<void *> blocks;
  for (std::size_t i = 0; i < (std::size_t{2} << 20) / 176; ++i) {
    blocks.push_back(defero_malloc(176));
    spans176.insert(addr(blocks.back()) >> 16);
  }
  const std::vector<std::uintptr_t> old48 = fillAndFree48();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // The 176 B blocks freed: their spans empty (a slow path), and the 48 B
  // ones, empty for 300 ms, go back.
  for (void *p : blocks)
    defero_free(p);
  ASSERT_LE(residentPagesOf(old48), old48.size() * 16 / 4) << "the 48 B spans did not go back";
  // 48 B blocks again, 1 MiB: into the resident 176 B spans, made over.
  const std::vector<unsigned char *> again = madeAndFilled(48, (std::size_t{1} << 20) / 48);
  std::size_t in176 = 0;
  for (unsigned char *p : again)
    in176 += spans176.count(addr(p) >> 16);
  EXPECT_GE(in176, again.size() * 3 / 4)
      << "of " << again.size() << " blocks of 48 B, " << in176 << " in the resident Empty 176 B spans";
  checkAndFreeFilled(again, 48);
}

// A gang takes a run of free slots whose pages are resident before one
// over pages a trim gave back (which would fault them in while the
// resident free slots stayed idle).
TEST(CApiFreshHeap, AGangTakesFreeSlotsWhosePagesAreResident) {
  PartlyUsedSpans small(64, std::size_t{4} << 20);
  small.thin(true);
  std::vector<void *> grow; // (as above: the 64 B spans' idle pages go back)
  for (int i = 0; i < (4 << 20) / 16; ++i)
    grow.push_back(defero_malloc(16));
  const std::size_t before = small.resident();
  ASSERT_LE(before, small.pages() / 2) << "the 64 B spans' idle pages did not go back";
  // 256 B blocks, a class with no span: gangs of 5 slots, 12 a kept page.
  const std::vector<unsigned char *> big = madeAndFilled(256, 1024);
  std::size_t over = 0;
  for (unsigned char *p : big)
    over += std::binary_search(small.spans.begin(), small.spans.end(), addr(p) >> 16);
  EXPECT_GE(over, 1024u * 9 / 10) << "the 256 B blocks did not lie over the 64 B spans' free slots";
  EXPECT_LE(small.resident(), before + 4)
      << "gangs faulted in " << small.resident() - before << " pages that had gone back";
  checkAndFreeFilled(big, 256);
  small.checkAndFree();
  for (void *p : grow)
    defero_free(p);
}

// A class that takes an Empty span whose memory went back grows the heap
// as a fresh span would: the thread's mid heap gives back its oldest
// resident free runs first, at least as much (SpanHeap::makeRoom).
TEST(CApiFreshHeap, AnEmptySpanTakenBackMakesTheMidHeapGiveBackItsIdleRuns) {
  const std::vector<std::uintptr_t> old48 = fillAndFree48();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  void *trigger = defero_malloc(512); // (a span needed: the 48 B ones go back)
  ASSERT_LE(residentPagesOf(old48), old48.size() * 16 / 4) << "the 48 B spans did not go back";
  FreedMidBlocks mid;
  // 1 MiB of 48 B blocks: their class takes its Empty spans back.
  std::vector<unsigned char *> again = madeAndFilled(48, (std::size_t{1} << 20) / 48);
  EXPECT_LE(mid.resident(), FreedMidBlocks::kPages * 3 / 4)
      << mid.resident() << " of " << FreedMidBlocks::kPages
      << " pages of the freed middle-sized blocks resident";
  checkAndFreeFilled(again, 48);
  defero_free(trigger);
}

TEST(CApiFreshHeap, AGangFreedByAnotherThreadGoesHome) {
  SparseSpans sparse;
  const long long live_before = liveBytes();
  std::vector<unsigned char *> big;
  for (int i = 0; i < 4096; ++i) {
    big.push_back(static_cast<unsigned char *>(defero_malloc(256)));
    std::memset(big.back(), i & 0xFF, 256);
  }
  std::thread([&] {
    for (std::size_t i = 0; i < big.size(); ++i) {
      for (int b = 0; b < 256; ++b)
        ASSERT_EQ(big[i][b], static_cast<unsigned char>(i & 0xFF)) << "block " << i;
      defero_free(big[i]);
    }
  }).join();
  // The owner collects them on its next refill: their runs serve again.
  EXPECT_GE(sparse.madeHere(256, 4096), 4096u * 9 / 10);
  EXPECT_EQ(liveBytes(), live_before);
  sparse.checkAndFree();
}

TEST(CApiFreshHeap, AGangFreedTwiceOrInsideIsReported) {
  SparseSpans sparse;
  void *p = nullptr;
  for (int i = 0; i < 64 && !(p && sparse.holds(p)); ++i)
    p = defero_malloc(256);
  ASSERT_TRUE(sparse.holds(p)) << "no block of 256 B became a gang";
  auto *q = static_cast<unsigned char *>(defero_malloc(256));
  ASSERT_TRUE(sparse.holds(q));
  EXPECT_DEATH(defero_free(q + 16), test::fatalLine("defero_free", q + 16, test::kInterior));
  EXPECT_DEATH(defero_free(q + 32), test::fatalLine("defero_free", q + 32, test::kInterior));
  // (q + 48 is the start of the run's second slot: free's fast path takes
  // it for a 64 B block. Such a pointer inside a gang is not told from a
  // block in the release build; the checked build has no gangs.)
  defero_free(p);
  EXPECT_DEATH(defero_free(p), test::fatalLine("defero_free", p, test::kInterior));
  EXPECT_EQ(defero_usable_size(p), 0u);
  defero_free(q);
}

// A thread whose sizes have moved on keeps no span pinned by the blocks on
// its free stacks of the classes it left, even when it takes no fresh
// memory: every 64 spans it takes (Empty, made over or fresh) those stacks
// go back to their spans. Here the spans of a 48 B class are each held by
// one stacked block while 96 B blocks fill first the 96 B class's own
// Empty spans, then, once those are used up, the 48 B spans made over.
// Its own process: a fresh heap, whose count of spans taken starts at 0.
// (Before, the stacks went back only every 64 fresh spans: here the 96 B
// blocks took 50 fresh spans while the 48 B ones stayed pinned; and a
// program whose blocks other threads freed, onto their stacks, kept the
// spans of every phase it left: soak_phases peak 835 -> 720 MB.)
TEST(CApiFreshHeap, StackedBlocksOfAClassLeftBehindDoNotPinItsSpans) {
  constexpr std::size_t kSmall = 48, kLarge = 96, kSpans = 100;
  // 48 B blocks over ~kSpans spans.
  std::vector<void *> small;
  for (std::size_t i = 0; i < kSpans * 65536 / kSmall; ++i) {
    small.push_back(defero_malloc(kSmall));
    ASSERT_NE(small.back(), nullptr);
  }
  // Empty spans of the 96 B class (the last ones freed stay on its stack).
  std::vector<void *> large;
  std::set<std::uintptr_t> large_spans;
  for (std::size_t i = 0; i < kSpans * 65536 / kLarge; ++i) {
    large.push_back(defero_malloc(kLarge));
    large_spans.insert(addr(large.back()) >> 16);
  }
  for (void *p : large)
    defero_free(p);
  large.clear();
  // Every 48 B block freed, the first of each span first: the free stack
  // (empty in a fresh heap) takes the first blocks freed while it has room
  // (the others go to their bitmaps), so it ends up holding a block of
  // each span.
  std::set<std::uintptr_t> small_spans;
  std::vector<bool> first(small.size());
  for (std::size_t i = 0; i < small.size(); ++i)
    if (small_spans.insert(addr(small[i]) >> 16).second) {
      first[i] = true;
      defero_free(small[i]);
    }
  for (std::size_t i = 0; i < small.size(); ++i)
    if (!first[i])
      defero_free(small[i]);
  // Half as many 96 B blocks again as the class's own Empty spans hold:
  // the rest need other spans, and the 48 B ones are there to be made over.
  std::size_t in_small_spans = 0;
  std::set<std::uintptr_t> fresh;
  for (std::size_t i = 0; i < 3 * kSpans * 65536 / kLarge / 2; ++i) {
    void *p = defero_malloc(kLarge);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x3C, kLarge);
    large.push_back(p);
    const std::uintptr_t span = addr(p) >> 16;
    in_small_spans += small_spans.count(span);
    if (!small_spans.count(span) && !large_spans.count(span))
      fresh.insert(span);
  }
  const std::size_t per_span = 65536 / kLarge;
  EXPECT_LE(fresh.size(), 2u) << fresh.size() << " fresh spans taken while "
                              << small_spans.size() - in_small_spans / per_span << " of the "
                              << small_spans.size()
                              << " spans of 48 B blocks stayed pinned by the 48 B free stack";
  EXPECT_GE(in_small_spans, small_spans.size() * per_span / 3);
  for (void *p : large)
    defero_free(p);
}

// A class the thread has left hands back what it kept for its next
// malloc before another class grows the heap: whenever a class's slow path
// finds it would take a fresh span, each other class that handed out no
// block since the last such look gives its free stack and cached word back
// to the bitmaps and its Current span to the Avail list, and its stack
// stays closed until it mallocs again (WordCacheLayer::retireIdle). Their
// slots then serve the growing class (gangs), where its blocks would have
// taken new memory. A class in use keeps its stack. Here 48 B and 80 B
// blocks are freed onto their stacks (LIFO: the next malloc of a class
// would be the last block it freed); then 64 B blocks are made, an 80 B
// block made and freed before each, 48 B ones not. The 64 B class lays
// blocks over the 48 B class's freed slots (SpanHeap::gangMalloc), which
// the 48 B class's stack held before; the 80 B class's next block is
// still the last it freed. Its own process: a fresh heap, whose first
// blocks of a class lie in address order. (Before, a stack kept up to 64
// KiB of a class whose demand had passed: at the peak of cc1plus's trace,
// 0.76 MB of 4.37.)
TEST(CApiFreshHeap, AClassLeftBehindGivesBackItsFreeStackAndCachedWord) {
  auto make = [](std::size_t bytes, std::size_t n, unsigned char fill) {
    std::vector<unsigned char *> v;
    for (std::size_t i = 0; i < n; ++i) {
      auto *p = static_cast<unsigned char *>(defero_malloc(bytes));
      EXPECT_NE(p, nullptr);
      std::memset(p, fill, bytes);
      v.push_back(p);
    }
    return v;
  };
  const std::vector<unsigned char *> left = make(48, 200, 0x48);
  const std::vector<unsigned char *> used = make(80, 200, 0x80);
  ASSERT_TRUE(std::is_sorted(left.begin(), left.end())) << "a fresh class's first slots";
  // The first 48 B block stays (its span is not Empty, to be made over).
  for (std::size_t i = 1; i < left.size(); ++i)
    defero_free(left[i]);
  for (unsigned char *p : used)
    defero_free(p);
  // 64 B blocks over four spans' worth (the class grows three times at
  // least), the 80 B class asked for before each.
  std::vector<unsigned char *> other;
  std::size_t over_left = 0;
  for (int i = 0; i < 4 * 1024; ++i) {
    void *q = defero_malloc(80);
    ASSERT_NE(q, nullptr);
    defero_free(q);
    auto *p = static_cast<unsigned char *>(defero_malloc(64));
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x64, 64);
    other.push_back(p);
    over_left += p >= left[1] && p < left.back() + 48;
  }
  EXPECT_GT(over_left, 50u) << "the 48 B class's freed slots stayed on its stack";
  auto *a = static_cast<unsigned char *>(defero_malloc(48));
  auto *b = static_cast<unsigned char *>(defero_malloc(80));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, left.back()) << "the 48 B class's next block is the last it freed: "
                               "its free stack was kept";
  EXPECT_EQ(b, used.back()) << "the 80 B class, in use, lost its free stack";
  for (unsigned char *p : other)
    for (int k = 0; k < 64; ++k)
      ASSERT_EQ(p[k], 0x64);
  for (int k = 0; k < 48; ++k)
    ASSERT_EQ(left.front()[k], 0x48);
  for (unsigned char *p : other)
    defero_free(p);
  defero_free(left.front());
  defero_free(a);
  defero_free(b);
}

// A thread that exits leaves its heap to the next new thread; until one
// adopts it, blocks other threads free for it go home at the next thread
// exit (that thread acts as the orphans' owner), and the memory of the
// orphan's Empty spans goes back to the OS at once (no thread of its will
// pass its decay again). Before, they stayed on its remote list and kept
// its spans resident for good (soak_phases: 405 MB resident after
// everything was freed and a second's idling).
TEST(CApiOrphans, BlocksFreedForAnExitedThreadGoHomeAndTheirMemoryBack) {
  constexpr std::size_t kSize = 48, kBytes = std::size_t{4} << 20;
  std::vector<void *> blocks;
  std::atomic<int> stage{0};
  std::thread b([&] { // has a heap of its own before a exits; orphaned second
    defero_free(defero_malloc(kSize));
    stage = 1;
    while (stage != 2)
      std::this_thread::yield();
  });
  while (stage != 1)
    std::this_thread::yield();
  std::thread a([&] { // orphaned first
    for (std::size_t i = 0; i < kBytes / kSize; ++i)
      blocks.push_back(defero_malloc(kSize));
  });
  a.join();
  stage = 2;
  b.join();
  std::set<std::uintptr_t> spans;
  for (void *p : blocks) {
    ASSERT_NE(p, nullptr);
    spans.insert(addr(p) >> 16);
  }
  const std::size_t pages = spans.size() * 16;
  // This thread frees them: they go to a's heap in batches.
  for (void *p : blocks)
    defero_free(p);
  EXPECT_GE(residentPagesOf({spans.begin(), spans.end()}), pages * 9 / 10);
  // A new thread adopts b's heap (the newest orphan) and exits: a's heap
  // takes its blocks home and gives its spans' memory back.
  std::thread c([] { defero_free(defero_malloc(kSize)); });
  c.join();
  const std::size_t after = residentPagesOf({spans.begin(), spans.end()});
  EXPECT_LE(after, pages / 4) << after << " of " << pages
                              << " pages of an exited thread's emptied spans still resident";
}

// Blocks above the size classes (up to 32 MiB) are cut from one region by
// address-ordered best fit: two freed neighbours merge, and a request of
// another size takes their memory. Before, each was a mapping of its own,
// kept in a cache of mappings by size (python3's trace: 55% fragmentation,
// 16% after). Its own process (CApiFreshHeap: see CMakeLists.txt), so that
// no earlier test's free run is a better fit.
TEST(CApiFreshHeap, FreedLargeNeighboursMergeAndServeARequestOfAnotherSize) {
  constexpr std::size_t kA = 3 << 20, kB = 5 << 20; // (past the thread's cache of small mappings)
  auto *a = static_cast<char *>(defero_malloc(kA));
  auto *b = static_cast<char *>(defero_malloc(kB));
  void *guard = defero_malloc(kA);
  ASSERT_TRUE(a && b && guard);
  ASSERT_EQ(b, a + kA) << "the region hands out neighbouring blocks";
  std::memset(a, 1, kA);
  std::memset(b, 2, kB);
  defero_free(a);
  defero_free(b);
  auto *c = static_cast<char *>(defero_malloc(kA + kB - 4096));
  EXPECT_EQ(c, a) << "the two freed blocks did not serve one request of their joint size";
  ASSERT_GE(defero_usable_size(c), kA + kB - 4096);
  std::memset(c, 3, kA + kB - 4096);
  defero_free(c);
  defero_free(guard);
}

// A block above 32 MiB is a mapping of its own; freed, the mapping is kept
// for DEFERO_DECAY_MS for the next request it holds (its tail past that
// unmapped), instead of each big buffer's pages faulting in afresh.
TEST(CApiLarge, AFreedBigMappingIsKeptForTheNextRequestItHolds) {
  constexpr std::size_t kBig = std::size_t{48} << 20;
  auto *p = static_cast<char *>(defero_malloc(kBig));
  ASSERT_NE(p, nullptr);
  std::memset(p, 0x11, kBig);
  const auto at = addr(p);
  defero_free(p);
  auto *q = static_cast<char *>(defero_malloc(kBig - (std::size_t{8} << 20)));
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(addr(q), at) << "a fresh mapping, though a 48 MiB one was just freed";
  EXPECT_EQ(defero_usable_size(q), kBig - (std::size_t{8} << 20)) << "the tail was not trimmed";
  std::memset(q, 0x22, kBig - (std::size_t{8} << 20));
  defero_free(q);
}

// Fills spans of 48-byte blocks and frees them all: at most 1/divisor of
// their pages may stay resident, and at least `released` bytes are
// counted as given back.
void expectEmptiedSpansGoBack(std::size_t divisor, long long released) {
  const std::vector<std::uintptr_t> spans = fillAndFree48();
  const std::size_t pages = spans.size() * 16;
  const std::size_t after = residentPagesOf(spans);
  EXPECT_LE(after, pages / divisor) << after << " of " << pages << " pages still resident";
  EXPECT_GE(releasedBytes(), released);
}

// A footprint ceiling (its own process, DEFERO_DECAY_MS=never and
// DEFERO_MAX_RESIDENT=1M: see CMakeLists.txt): while the heap holds more
// than the ceiling, an emptied span's memory goes back at once, though no
// delay ever would.
TEST(CApiCeiling, AboveTheCeilingEmptiedSpansGiveTheirMemoryBackAtOnce) {
  if (!runsWith("DEFERO_MAX_RESIDENT", "1M"))
    GTEST_SKIP() << "runs with DEFERO_MAX_RESIDENT=1M (ctest sets it)";
  expectEmptiedSpansGoBack(2, 3 << 19);
}

// DEFERO_DECAY_MS=0: a freed mapping above 32 MiB is unmapped at once.
TEST(CApiDecayNow, AFreedBigMappingIsUnmappedAtOnce) {
  if (!runsWith("DEFERO_DECAY_MS", "0"))
    GTEST_SKIP() << "runs with DEFERO_DECAY_MS=0 (ctest sets it)";
  constexpr std::size_t kBig = std::size_t{40} << 20;
  auto *p = static_cast<char *>(defero_malloc(kBig));
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, kBig);
  defero_free(p);
  unsigned char vec[1];
  EXPECT_NE(mincore(p, 4096, vec), 0) << "the freed 40 MiB mapping is still mapped";
}

// DEFERO_DECAY_MS=0 (its own process): a large block's memory goes back
// as soon as it is freed (the region keeps the address range).
TEST(CApiDecayNow, AFreedLargeBlockGivesItsMemoryBackAtOnce) {
  if (!runsWith("DEFERO_DECAY_MS", "0"))
    GTEST_SKIP() << "runs with DEFERO_DECAY_MS=0 (ctest sets it)";
  constexpr std::size_t kSize = 2 << 20;
  auto *p = static_cast<char *>(defero_malloc(kSize));
  void *guard = defero_malloc(kSize);
  ASSERT_TRUE(p && guard);
  std::memset(p, 1, kSize);
  const long long before = releasedBytes();
  defero_free(p);
  std::vector<unsigned char> vec(kSize / 4096);
  ASSERT_EQ(mincore(p, kSize, vec.data()), 0);
  std::size_t resident = 0;
  for (unsigned char c : vec)
    resident += c & 1;
  EXPECT_EQ(resident, 0u) << "pages of a freed 2 MiB block still resident";
  EXPECT_GE(releasedBytes(), before + static_cast<long long>(kSize));
  defero_free(guard);
}

// DEFERO_DECAY_MS=0 (its own process: see CMakeLists.txt): a span's memory
// goes back as soon as it empties.
// Middle-sized blocks another thread freed reach their heap's owner on its
// span heap's slow paths too (MidHeap::collectRemote, from SpanHeap::decay):
// a thread whose sizes moved to the classes takes nothing from its mid heap
// again, and such blocks stayed live and resident (soak_phases on four
// threads, whose phases' survivors the next thread frees: 27 MB).
TEST(CApiDecayNow, MidBlocksAnotherThreadFreedGoBackWhileTheOwnerMakesOnlySmallOnes) {
  constexpr std::size_t kBlock = 256 * 1024, kPages = 16 * kBlock / 4096;
  std::vector<void *> mid;
  for (int i = 0; i < 16; ++i) {
    void *p = defero_malloc(kBlock);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x5C, kBlock);
    mid.push_back(p);
  }
  std::thread([&] {
    for (void *p : mid)
      defero_free(p);
  }).join();
  const auto resident = [&] {
    std::size_t n = 0;
    for (void *p : mid)
      n += residentPages(p, kBlock);
    return n;
  };
  const std::size_t before = resident();
  EXPECT_GE(before, kPages * 9 / 10) << "freed by another thread, not yet taken by their owner";
  std::vector<void *> small; // (about 73 spans of 48 B blocks: as many slow paths)
  for (int i = 0; i < 100000; ++i)
    small.push_back(defero_malloc(48));
  const std::size_t after = resident();
  for (void *p : small)
    defero_free(p);
  EXPECT_LE(after, kPages / 4) << "of the " << kPages << " pages of 16 blocks of 256 KiB another "
                               << "thread freed, " << after << " stayed resident";
}

TEST(CApiDecayNow, AnEmptiedSpanGivesItsMemoryBackAtOnce) {
  if (!runsWith("DEFERO_DECAY_MS", "0"))
    GTEST_SKIP() << "runs with DEFERO_DECAY_MS=0 (ctest sets it)";
  expectEmptiedSpansGoBack(4, 1 << 20);
}

// A list this thread holds no run for (a new one, or one the container
// table forgot: a program with many small lists) whose tail has no free
// slot within a line or two takes a hole in the tail's K-class, not a run
// of its own cut from other memory (debruijn_net's 65,536 lists of four
// nodes: peak footprint 13.3 -> 12.7 MB).
namespace {

/// 3000 live blocks of 48 B and, among them, the only node of a list
/// (`tail`) deep inside a contiguous stretch (every slot within a line or
/// two of it live) and, a few slots above it in its K-class, one free
/// slot: `hole`.
struct ListInACrowd {
  static constexpr std::size_t kSize = 48, kBlocks = 3000;
  std::vector<void *> blocks;
  void *tail = nullptr, *hole = nullptr;
  ~ListInACrowd() {
    for (void *b : blocks)
      if (b)
        defero_free(b);
  }
  /// Frees blocks[i] and forgets it.
  void *release(std::size_t i) {
    void *b = blocks[i];
    defero_free(b);
    blocks[i] = nullptr;
    return b;
  }
};

/// Links `tail` as the only node of the list whose header is `head`.
void linkAlone(void **head, void *tail) {
  head[0] = head[1] = tail;
  static_cast<void **>(tail)[0] = head;
  static_cast<void **>(tail)[1] = head;
}

/// Makes c, with `head` the header of the tail's list.
void makeListInACrowd(ListInACrowd &c, void **head) {
  for (std::size_t i = 0; i < c.kBlocks; ++i) {
    c.blocks.push_back(defero_malloc(c.kSize));
    ASSERT_NE(c.blocks.back(), nullptr);
  }
  std::sort(c.blocks.begin(), c.blocks.end());
  // (The first blocks may be ones earlier tests left on the class's free
  // stack, scattered: the tail is the first from the middle on in a
  // contiguous stretch.)
  const std::size_t slot = defero_usable_size(c.blocks[0]);
  auto contiguous = [&](std::size_t from, std::size_t to) {
    for (std::size_t j = from; j < to; ++j)
      if (addr(c.blocks[j + 1]) - addr(c.blocks[j]) != slot)
        return false;
    return true;
  };
  std::size_t t = c.kBlocks / 2, hole = 0;
  for (; t < c.kBlocks - 40 && !hole; ++t) {
    if (!contiguous(t - 8, t + 6))
      continue;
    for (std::size_t j = t + 6; j < t + 40 && !hole; ++j)
      if (defero_class_of(c.blocks[j]) == defero_class_of(c.blocks[t]) &&
          addr(c.blocks[j]) - addr(c.blocks[t]) == (j - t) * slot)
        hole = j;
  }
  ASSERT_NE(hole, 0u) << "no block a few slots above a tail in its class";
  c.tail = c.blocks[--t];
  c.hole = c.release(hole);
  linkAlone(head, c.tail);
}

} // namespace

// A list with no run whose tail has no room beside it: its next node takes
// a hole in the tail's K-class (before a run of its own is cut).
TEST(CApiHints, AListWithNoRunTakesAHoleInItsTailsKClass) {
  requireAutoPolicy();
  ListInACrowd c;
  static void *head[2]; // a list the container table has never seen
  makeListInACrowd(c, head);
  if (HasFatalFailure())
    return;
  insertedLastInto(head); // (a hop from another list would take malloc's slot)
  void *p = __defero_new_hinted(c.kSize, 1, head, c.tail, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p, c.hole) << "the node went " << static_cast<long long>(addr(p) - addr(c.tail))
                       << " bytes from its tail, not into the hole in its K-class";
  EXPECT_EQ(defero_class_of(p), defero_class_of(c.tail));
  defero_free(p);
}

// Under auto, a neighbour hint that hops from another container (the
// thread's last hinted allocation served another one: lists filled in
// turn, edge by edge) and finds no room beside its anchor takes malloc's
// slot, in allocation order with its neighbours in time, not the hole in
// its anchor's K-class; by either hint route, counted as a hinted
// allocation. The next insert into the same list continues from it.
TEST(CApiHints, AnInsertHoppingFromAnotherListTakesMallocsSlotWhenItsTailHasNoRoom) {
  requireAutoPolicy();
  ListInACrowd c;
  static void *head[2];
  makeListInACrowd(c, head);
  if (HasFatalFailure())
    return;
  static int other;
  for (bool fused : {true, false}) {
    SCOPED_TRACE(fused ? "fused" : "one-shot hint");
    insertedLastInto(&other);
    // malloc's slot: the block freed last (the class's free stack), freed
    // after the block right above it, in a span other than the tail's and
    // than the last iteration's (a span where a hint placed takes its
    // owner's frees into its bitmap, not onto the stack).
    const std::size_t d = fused ? c.kBlocks - 10 : 300;
    ASSERT_EQ(addr(c.blocks[d + 1]) - addr(c.blocks[d]), defero_usable_size(c.blocks[d]));
    void *const above = c.release(d + 1);
    void *const decoy = c.release(d);
    const Stats s0 = stats();
    void *p;
    if (fused) {
      p = __defero_new_hinted(c.kSize, 1, head, c.tail, 0);
    } else {
      __defero_hint_neighbor(head, c.tail);
      p = defero_malloc(c.kSize);
    }
    ASSERT_NE(p, nullptr);
    const Stats s1 = stats();
    EXPECT_NE(p, c.hole) << "a hop took the hole in its tail's K-class";
    EXPECT_EQ(p, decoy) << "a hop did not take malloc's slot";
    EXPECT_EQ(num(s1, "hinted_allocs") - num(s0, "hinted_allocs"), 1);
    EXPECT_EQ(num(s1, "hints.neighbor") - num(s0, "hints.neighbor"), 1);
    // The list is the thread's last now: its next node is no hop and goes
    // right above the new tail.
    void *q = __defero_new_hinted(c.kSize, 1, head, p, 0);
    EXPECT_EQ(q, above) << "the insert after a hop did not continue above it";
    defero_free(q);
    defero_free(p);
  }
}

namespace {

/// A std::list as libstdc++ lays it out: the header {next, prev} in the
/// list object (pointing at itself while the list is empty), nodes
/// {next, prev, value}. Its nodes come from the fused entry or from the
/// one-shot hint and defero_malloc, with the anchor the plugin names for a
/// push_back: the tail, or the header when the list is empty.
struct FakeList {
  void *link[2] = {link, link};
  FakeList() = default;
  FakeList(const FakeList &) = delete;
  FakeList &operator=(const FakeList &) = delete;

  /// A node of `kListNode` bytes (default: two links and an int).
  void *pushBack(bool fused, std::size_t kListNode = 24) {
    void *tail = link[1];
    void *p;
    if (fused) {
      p = __defero_new_hinted(kListNode, 1, this, tail, 0);
    } else {
      __defero_hint_neighbor(this, tail);
      p = defero_malloc(kListNode);
    }
    if (p) {
      auto **n = static_cast<void **>(p);
      n[0] = link;
      n[1] = tail;
      static_cast<void **>(tail)[0] = p;
      link[1] = p;
    }
    return p;
  }
  /// Unlinks and frees the first node (the list must not be empty).
  void popFront() {
    void **n = static_cast<void **>(link[0]);
    link[0] = n[0];
    if (n[0] == link)
      link[1] = link;
    else
      static_cast<void **>(n[0])[1] = link;
    defero_free(n);
  }
  /// Frees every node; the list is empty again.
  void clear() {
    for (void *n = link[0]; n != link;) {
      void *next = static_cast<void **>(n)[0];
      defero_free(n);
      n = next;
    }
    link[0] = link[1] = link;
  }
  /// Whether every node lies in one cell: two consecutive cache lines
  /// (an aligned pair for the 16, 32 and 64-byte classes, any two for the
  /// 24-byte class's cells of four).
  bool inOneCell() const {
    std::uintptr_t lo = ~std::uintptr_t{0}, hi = 0;
    for (void *n = link[0]; n != link; n = static_cast<void *const *>(n)[0]) {
      lo = std::min(lo, addr(n) / 64);
      hi = std::max(hi, (addr(n) + defero_usable_size(n) - 1) / 64);
    }
    return hi - lo <= 1 && (defero_usable_size(link[0]) % 16 != 0 || lo % 2 == 0);
  }
};

/// Fills lists in turn, one node each a round, `rounds` rounds: adjacency
/// lists built edge by edge (debruijn_net).
void fillInTurn(std::vector<FakeList> &lists, std::size_t from, std::size_t step, int rounds,
                bool fused, std::size_t node = 24) {
  for (int r = 0; r < rounds; ++r)
    for (std::size_t i = from; i < lists.size(); i += step)
      ASSERT_NE(lists[i].pushBack(fused, node), nullptr);
}

} // namespace

// A hinted node of 33-40 bytes made by operator new of one object (here
// the fused entry) takes the 40-byte node class: 8-byte aligned, packed 40
// bytes apart (and one of 17-24 bytes the 24-byte class). malloc's blocks
// of those sizes, hinted or not, keep 48-byte (32-byte) slots and 16-byte
// alignment, and a one-shot hint's malloc naming a node of the node class
// as its neighbour does not continue there.
TEST(CApiHints, AFusedNodeOf33To40BytesTakesTheNodeClassAndMallocsBlocksNever) {
  requireAutoPolicy();
  FakeList fused, one_shot;
  bool off16 = false;
  int above = 0;
  for (int i = 0; i < 64; ++i) {
    void *tail = fused.link[1];
    void *p = fused.pushBack(true, 40);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(defero_usable_size(p), 40u) << "node " << i;
    EXPECT_EQ(addr(p) % 8, 0u) << "node " << i;
    off16 |= addr(p) % 16 != 0;
    above += i > 0 && addr(p) == addr(tail) + 40;
  }
  EXPECT_TRUE(off16) << "40-byte slots: every other one lies 8 bytes off a 16-byte boundary";
  EXPECT_GE(above, 56) << "push_backs right above their tail, of 63";
  // A one-shot hint's malloc after the fused list's tail: malloc's slot.
  __defero_hint_neighbor(&fused, fused.link[1]);
  void *m = defero_malloc(40);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(defero_usable_size(m), 48u);
  EXPECT_EQ(addr(m) % 16, 0u);
  defero_free(m);
  for (int i = 0; i < 64; ++i) {
    void *p = one_shot.pushBack(false, 33 + i % 8);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(defero_usable_size(p), 48u) << "one-shot node " << i;
    EXPECT_EQ(addr(p) % 16, 0u) << "one-shot node " << i;
    void *q = defero_malloc(33 + i % 8);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(defero_usable_size(q), 48u);
    EXPECT_EQ(addr(q) % 16, 0u);
    defero_free(q);
  }
  // 17-24 bytes: the 24-byte class; 16, 32 and 41 bytes: malloc's.
  FakeList tiny, small, large, l24, one_shot24;
  for (int i = 0; i < 4; ++i) {
    void *t = tiny.pushBack(true, 16), *a = small.pushBack(true, 32),
         *b = large.pushBack(true, 41), *c = l24.pushBack(true, 17 + i * 2),
         *d = one_shot24.pushBack(false, 24);
    ASSERT_TRUE(t && a && b && c && d);
    EXPECT_EQ(defero_usable_size(t), 16u);
    EXPECT_EQ(defero_usable_size(a), 32u);
    EXPECT_EQ(defero_usable_size(b), 48u);
    EXPECT_EQ(defero_usable_size(c), 24u);
    EXPECT_EQ(defero_usable_size(d), 32u);
    EXPECT_EQ(addr(t) % 16 + addr(a) % 16 + addr(b) % 16 + addr(d) % 16, 0u);
    EXPECT_EQ(addr(c) % 8, 0u);
  }
  EXPECT_TRUE(l24.inOneCell()) << "a 24-byte list's first four nodes in two lines";
  for (FakeList *l : {&fused, &one_shot, &tiny, &small, &large, &l24, &one_shot24})
    l->clear();
}

// Lists filled in turn (each insert hops from another list) keep each
// list's nodes in two cache lines: an empty list's first node opens a cell
// of 128 bytes that its next nodes fill, however many lists are filled
// between (on the previous runtime, 978 of 1,000 such lists had their
// nodes in three or four lines).
TEST(CApiHints, ListsFilledInTurnKeepEachListInACellOfTwoLines) {
  requireAutoPolicy();
  for (bool fused : {true, false}) {
    SCOPED_TRACE(fused ? "fused" : "one-shot hint");
    std::vector<FakeList> lists(3000);
    fillInTurn(lists, 0, 1, 4, fused);
    if (HasFatalFailure())
      return;
    const auto spread =
        std::count_if(lists.begin(), lists.end(), [](const FakeList &l) { return !l.inOneCell(); });
    EXPECT_EQ(spread, 0) << spread << " of " << lists.size()
                         << " lists have nodes outside their cell of two lines";
    for (FakeList &l : lists)
      l.clear();
  }
}

// Lists filled in turn whose nodes outgrow their first cell (md_cells's
// cells of about eight 64-byte particles) go on in a grown cell of 512
// bytes each: a list's third to tenth nodes lie one slot apart. (On the
// previous runtime each took malloc's slot: 1,999 of 2,000 such lists had
// them scattered.)
TEST(CApiHints, AListFilledInTurnThatFillsItsCellGoesOnInAGrownCell) {
  requireAutoPolicy();
  constexpr std::size_t kParticle = 56; // (a 64-byte slot with the links)
  for (bool fused : {true, false}) {
    SCOPED_TRACE(fused ? "fused" : "one-shot hint");
    std::vector<FakeList> lists(2000);
    fillInTurn(lists, 0, 1, 10, fused, kParticle);
    if (HasFatalFailure())
      return;
    std::size_t scattered = 0;
    for (const FakeList &l : lists) {
      std::vector<std::uintptr_t> a;
      for (void *n = l.link[0]; n != l.link; n = static_cast<void *const *>(n)[0])
        a.push_back(addr(n));
      ASSERT_EQ(a.size(), 10u);
      const std::uintptr_t stride = a[1] - a[0]; // (the first cell's two nodes)
      bool together = stride >= kParticle && stride <= 64;
      for (std::size_t i = 3; i < a.size(); ++i)
        together = together && a[i] - a[i - 1] == stride;
      scattered += !together;
    }
    // (A third node may find a free slot beside its tail, in a grown cell
    // another list has not filled yet, and the two lists then share it: a
    // few lists of the 2,000.)
    EXPECT_LE(scattered, lists.size() / 100) << scattered << " of " << lists.size()
                                             << " lists have their third to tenth nodes apart";
    for (FakeList &l : lists)
      l.clear();
  }
}

// Nodes that move from list to list after the lists were filled (md_cells's
// particles changing cells: erase from one list, push_back onto another)
// do not grow the heap: while a class's nodes are being replaced, not
// added, a list's new cell takes no fresh span (PlacementLayer::growing)
// and the node takes a hole. Here 189,000 moves of 56-byte nodes among
// 2,000 lists of 10: footprint 1.31 -> 1.51 MB (the previous runtime:
// 1.31 -> 1.90 MB, and still growing with more moves).
TEST(CApiHints, NodesMovingBetweenListsReuseTheHeapsHoles) {
  requireAutoPolicy();
  constexpr std::size_t kParticle = 56;
  std::vector<FakeList> lists(2000);
  fillInTurn(lists, 0, 1, 10, true, kParticle);
  if (HasFatalFailure())
    return;
  const long long filled = num(stats(), "peak_footprint_bytes");
  std::uint64_t x = 7;
  auto next = [&x](std::size_t n) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::size_t>((x >> 33) % n);
  };
  std::size_t moved = 0;
  for (int round = 0; round < 400; ++round)
    for (std::size_t m = 0; m < 500; ++m) {
      FakeList &from = lists[next(lists.size())];
      if (from.link[0] == from.link)
        continue;
      from.popFront();
      ASSERT_NE(lists[next(lists.size())].pushBack(true, kParticle), nullptr);
      ++moved;
    }
  const long long after = num(stats(), "peak_footprint_bytes");
  EXPECT_LE(after, filled + filled / 4)
      << "moving " << moved << " nodes grew the footprint from " << filled << " to " << after;
  for (FakeList &l : lists)
    l.clear();
}

// A neighbour hint whose container and anchor are nonsense (unmapped, odd,
// null, the anchor "in" a container object that is not there), or a
// container hint naming such a container (in turn and twice in a row: a
// hop, then a container being filled), still gives a usable block: the
// runtime reads no header to decide that a list is empty, so nothing
// faults.
TEST(CApiHints, ANonsenseContainerAndAnchorGetABlockAndNoFault) {
  const std::uintptr_t bad[][2] = {{1, 8}, {0xdead0000, 0xdead0008}, {0xdead0000, 0xdead0003},
                                   {0, 0}, {0xdead0000, 0}, {~std::uintptr_t{0} - 8, 8}};
  for (int kind : {1, 3}) // (a container hint names the container only)
    for (bool fused : {true, false})
      for (const auto &b : bad) {
        SCOPED_TRACE(testing::Message() << "kind " << kind << (fused ? " fused " : " one-shot ")
                                        << b[0] << ", " << b[1]);
        const void *c = reinterpret_cast<const void *>(b[0]), *w = reinterpret_cast<const void *>(b[1]);
        void *p;
        if (fused) {
          p = __defero_new_hinted(24, kind, c, kind == 1 ? w : nullptr, 0);
        } else {
          if (kind == 1)
            __defero_hint_neighbor(c, w);
          else
            __defero_hint_container(c);
          p = defero_malloc(24);
        }
        ASSERT_NE(p, nullptr);
        std::memset(p, 0x5a, 24);
        EXPECT_GE(defero_usable_size(p), 24u);
        defero_free(p);
      }
}

// A map filled between a list's inserts (mini_compiler's symbol table:
// operator[] and emplace send a container hint, the node being made before
// its place is known): each such node hops (hopsContainers) and takes
// malloc's slot, the block freed last, and leaves the thread's recent node
// as it was, so the list's next push_back lands right above its tail. A
// container hint that follows one for the same container is a container
// being filled, placed as before: its next node lands right above it. (On
// the previous runtime the map's node went through the full path, which
// gave its class's free stack back to the spans first: not the block freed
// last.)
TEST(CApiHints, AContainerHintBetweenAListsInsertsTakesMallocsSlotAndTheListGoesOn) {
  requireAutoPolicy();
  constexpr std::size_t kListNode = 24;
  for (bool fused : {true, false}) {
    SCOPED_TRACE(fused ? "fused" : "one-shot hint");
    // The map's nodes are of a class no hint placed in yet (not the list's
    // cells', not the other round's).
    const std::size_t kMapNode = fused ? 48 : 96;
    auto containerNode = [fused, kMapNode](const void *c) {
      if (fused)
        return __defero_new_hinted(kMapNode, 3, c, nullptr, 0);
      __defero_hint_container(c);
      return defero_malloc(kMapNode);
    };
    FakeList list;
    static int map;
    std::vector<void *> maps, plain;
    for (int i = 0; i < 64; ++i) // blocks of the map's class in spans where no hint placed
      plain.push_back(defero_malloc(kMapNode));
    // An empty list's first node opens a cell of 128 bytes; its second
    // goes right above it: the slot's stride.
    void *first = list.pushBack(fused), *second = list.pushBack(fused);
    ASSERT_TRUE(first && second);
    const std::uintptr_t stride = addr(second) - addr(first);
    ASSERT_TRUE(stride >= kListNode && stride <= 64) << stride;
    const Stats s0 = stats();
    for (int i = 0; i < 2; ++i) { // (the cell's third and fourth nodes)
      void *tail = list.link[1];
      void *freed = plain.back();
      plain.pop_back();
      defero_free(freed);
      void *m = containerNode(&map);
      ASSERT_NE(m, nullptr);
      maps.push_back(m);
      EXPECT_EQ(m, freed) << "the map's node took malloc's slot (the block freed last), insert " << i;
      void *n = list.pushBack(fused);
      ASSERT_NE(n, nullptr);
      EXPECT_EQ(addr(n), addr(tail) + stride) << "the list's node right above its tail, insert " << i;
    }
    EXPECT_TRUE(list.inOneCell());
    const Stats s1 = stats();
    EXPECT_EQ(num(s1, "hints.container") - num(s0, "hints.container"), 2);
    EXPECT_EQ(num(s1, "hinted_allocs") - num(s0, "hinted_allocs"), 4) << "every node counted as hinted";
    // Three in a row: the second is the map being filled, the third goes
    // beside it (right above, when that slot is free).
    void *a = containerNode(&map), *b = containerNode(&map), *c = containerNode(&map);
    ASSERT_TRUE(a && b && c);
    const std::uintptr_t apart = addr(c) > addr(b) ? addr(c) - addr(b) : addr(b) - addr(c);
    EXPECT_LE(apart, 128u) << "the third node of a container filled in a row lies beside the second";
    for (void *x : {a, b, c})
      maps.push_back(x);
    for (void *x : maps)
      defero_free(x);
    for (void *x : plain)
      defero_free(x);
    list.clear();
  }
}

// The cells of cleared lists are taken again before the heap grows: half
// of 6,000 lists cleared and refilled in turn (192 KiB of cells) leave the
// peak footprint within one span of where it was, each list still in one
// cell.
TEST(CApiHints, ACellAClearedListGaveBackIsTakenBeforeTheHeapGrows) {
  requireAutoPolicy();
  std::vector<FakeList> lists(6000);
  fillInTurn(lists, 0, 1, 4, true);
  if (HasFatalFailure())
    return;
  for (std::size_t i = 0; i < lists.size(); i += 2)
    lists[i].clear();
  const long long before = num(stats(), "peak_footprint_bytes");
  fillInTurn(lists, 0, 2, 4, true);
  if (HasFatalFailure())
    return;
  const long long after = num(stats(), "peak_footprint_bytes");
  EXPECT_LE(after - before, 64 * 1024) << "the refilled lists took fresh memory";
  const auto spread =
      std::count_if(lists.begin(), lists.end(), [](const FakeList &l) { return !l.inOneCell(); });
  EXPECT_EQ(spread, 0);
  for (FakeList &l : lists)
    l.clear();
}

// Lists cleared and filled again round after round, while a queue fills
// whole spans and gives them back (debruijn_net's failed and repaired
// nodes, and its breadth-first search's std::list queue), keep the heap's
// size: once the class's spans hold an eighth more slots than its most
// taken, a list's new cell takes no whole span (the queue's, given back)
// but a free group or a hole (PlacementLayer::overgrown). Here 6,000
// lists of four 24-byte nodes, 120 of them cleared and refilled a round:
// from round 10 to 300 the runtime before this rule (bd29963) grew its
// footprint 0.92 -> 1.64 MB; now within two spans (0.59 MB after the
// fill, 0.85 MB from round 50 on).
TEST(CApiHints, ListsClearedAndRefilledRoundAfterRoundDoNotGrowTheHeap) {
  requireAutoPolicy();
  std::vector<FakeList> lists(6000);
  fillInTurn(lists, 0, 1, 4, true);
  if (HasFatalFailure())
    return;
  FakeList queue;
  long long settled = 0;
  for (int round = 0; round < 300; ++round) {
    if (round == 10)
      settled = num(stats(), "peak_footprint_bytes");
    std::vector<FakeList *> cleared;
    for (std::size_t i = static_cast<std::size_t>(round) * 7 % 50; i < lists.size(); i += 50) {
      lists[i].clear();
      cleared.push_back(&lists[i]);
    }
    for (int n = 0; n < 4; ++n)
      for (FakeList *l : cleared)
        ASSERT_NE(l->pushBack(true, 24), nullptr);
    for (int n = 0; n < 2000; ++n)
      ASSERT_NE(queue.pushBack(true, 24), nullptr);
    queue.clear();
  }
  const long long after = num(stats(), "peak_footprint_bytes");
  EXPECT_LE(after - settled, 2 * 65536)
      << "290 rounds grew the footprint from " << settled << " to " << after;
  for (FakeList &l : lists)
    l.clear();
}

// Under DEFERO_POLICY=best every neighbour hint is placed: a hop with no
// room beside its anchor takes the hole in the anchor's K-class.
TEST(CApiBestPolicy, AHopFromAnotherListIsPlacedInItsTailsKClass) {
  ASSERT_EQ(stats().at("policy"), "best") << "CTest runs this suite with DEFERO_POLICY=best";
  ListInACrowd c;
  static void *head[2];
  makeListInACrowd(c, head);
  if (HasFatalFailure())
    return;
  static int other;
  insertedLastInto(&other);
  void *const decoy = c.release(10);
  void *p = __defero_new_hinted(c.kSize, 1, head, c.tail, 0);
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p, decoy);
  EXPECT_EQ(p, c.hole) << "the node went " << static_cast<long long>(addr(p) - addr(c.tail))
                       << " bytes from its tail, not into the hole in its K-class";
  defero_free(p);
}

// Under DEFERO_POLICY=first a hinted node that has no container policy of
// its own is not placed, whichever way its hint came: it gets the slot
// malloc would give (not the free slot right above its anchor, which auto
// would take) and counts as a hinted allocation.
TEST(CApiFirstPolicy, NeitherHintRoutePlacesANode) {
  ASSERT_EQ(stats().at("policy"), "first") << "CTest runs this suite with DEFERO_POLICY=first";
  constexpr std::size_t kSize = 48, kBlocks = 4000; // three spans of 48 B slots
  std::vector<void *> blocks;
  for (std::size_t i = 0; i < kBlocks; ++i) {
    blocks.push_back(defero_malloc(kSize));
    ASSERT_NE(blocks.back(), nullptr);
  }
  std::sort(blocks.begin(), blocks.end());
  static void *head[2];
  for (bool fused : {true, false}) {
    SCOPED_TRACE(fused ? "fused" : "one-shot hint");
    // An anchor in the oldest span (not the one malloc is taking slots
    // from) with the slot right above it free.
    const std::size_t a = fused ? 100 : 200, slot = defero_usable_size(blocks[a]);
    ASSERT_EQ(addr(blocks[a + 1]), addr(blocks[a]) + slot);
    void *const hole = blocks[a + 1];
    defero_free(hole);
    blocks[a + 1] = nullptr;
    // malloc's slot is the block freed last (its free stack): not the hole.
    void *const decoy = blocks[kBlocks - 1 - a];
    defero_free(decoy);
    blocks[kBlocks - 1 - a] = nullptr;
    head[0] = head[1] = blocks[a];
    static_cast<void **>(blocks[a])[0] = head;
    static_cast<void **>(blocks[a])[1] = head;
    const Stats s0 = stats();
    void *p;
    if (fused) {
      p = __defero_new_hinted(kSize, 1, head, blocks[a], 0);
    } else {
      __defero_hint_neighbor(head, blocks[a]);
      p = defero_malloc(kSize);
    }
    ASSERT_NE(p, nullptr);
    const Stats s1 = stats();
    EXPECT_NE(p, hole) << "placed right above its anchor under First";
    EXPECT_EQ(p, decoy) << "not malloc's slot";
    EXPECT_GE(defero_usable_size(p), kSize);
    EXPECT_EQ(num(s1, "hinted_allocs") - num(s0, "hinted_allocs"), 1);
    EXPECT_EQ(num(s1, "hints.neighbor") - num(s0, "hints.neighbor"), 1);
    defero_free(p);
  }
  for (void *b : blocks)
    if (b)
      defero_free(b);
}

// What the fast path must not take for a continuation: another size, a
// node in the middle (insert before it), a left child, a kind it does not
// know, a freed node named by a container hint.
TEST(CApiHints, OnlyATrueContinuationTakesTheSlotAboveTheTail) {
  requireAutoPolicy();
  static void *head[2];
  head[0] = head[1] = head;
  std::vector<void **> nodes = pushBackChain(head, 8, 48, true);
  void **tail = nodes.back();
  const long long h0 = num(stats(), "hinted_allocs");
  void *other = __defero_new_hinted(200, 1, head, tail, 0); // another size
  ASSERT_NE(other, nullptr);
  EXPECT_GE(defero_usable_size(other), 200u);
  EXPECT_NE(addr(other), addr(tail) + 48);
  void *unknown = __defero_new_hinted(48, 42, head, tail, 0);
  EXPECT_NE(unknown, nullptr);
  EXPECT_EQ(num(stats(), "hinted_allocs"), h0 + 1) << "an unknown kind is not a hint";
  // A left child of the tail goes below it when there is room there.
  void **below = nodes[nodes.size() - 2];
  ASSERT_EQ(addr(below), addr(tail) - 48) << "the chain was not contiguous";
  nodes.erase(nodes.end() - 2);
  defero_free(below);
  void *left = __defero_new_hinted(48, 2, head, tail, 1);
  ASSERT_NE(left, nullptr);
  EXPECT_EQ(addr(left), addr(tail) - 48);
  for (void **p : nodes)
    defero_free(p);
  for (void *p : {other, unknown, left})
    defero_free(p);
  // Every node of the container freed: a container hint has no anchor.
  void *fresh = __defero_new_hinted(48, 3, head, nullptr, 0);
  ASSERT_NE(fresh, nullptr);
  defero_free(fresh);
}

// A policy set on a container ends the calling thread's continuation of
// it: the next push_back is placed by the policy (and counted as such).
TEST(CApiPolicy, APolicySetMidChainIsReadOnTheNextPushBack) {
  requireAutoPolicy();
  static void *head[2];
  head[0] = head[1] = head;
  std::vector<void **> nodes = pushBackChain(head, 4, 48, true);
  const long long p0 = num(stats(), "policy_allocs");
  __defero_container_policy(head, "best", 0);
  void *next = __defero_new_hinted(48, 1, head, nodes.back(), 0);
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(num(stats(), "policy_allocs"), p0 + 1);
  for (void **p : nodes)
    defero_free(p);
  defero_free(next);
}

// --- container policies -------------------------------------------------------

TEST(CApiPolicy, BadPredicateOrKIsReportedInOneLineAndChangesNothing) {
  requireAutoPolicy();
  static int stays_best, stays_default, control_first;
  // Valid calls print nothing.
  testing::internal::CaptureStderr();
  __defero_container_policy(&stays_best, "best", 0);
  __defero_container_policy(&control_first, "first", 20);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");

  const std::string before = statsText();
  struct Bad {
    const void *c;
    const char *pred;
    int k;
    const char *must_name;
  };
  const Bad bad[] = {{&stays_best, "bogus", 0, "'bogus'"},
                     {&stays_best, "first", 99, "k=99"},
                     {&stays_best, "first", -1, "k=-1"},
                     {&stays_default, "First", 0, "'First'"},
                     {&stays_default, nullptr, 0, "(null)"}};
  for (const Bad &b : bad) {
    testing::internal::CaptureStderr();
    __defero_container_policy(b.c, b.pred, b.k);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.rfind("defero: ", 0), 0u) << err;
    EXPECT_EQ(err.find('\n'), err.size() - 1) << "exactly one line: " << err;
    EXPECT_NE(err.find(b.must_name), std::string::npos) << err;
    EXPECT_NE(err.find("__defero_container_policy"), std::string::npos) << err;
  }
  EXPECT_EQ(statsText(), before) << "a rejected policy changes no statistic";

  // Placement: a lower class has room, so Best and First differ.
  Room r;
  makeRoom(r);
  ASSERT_NE(r.a, nullptr);
  auto hinted = [&](const void *c) {
    __defero_hint_neighbor(c, r.a);
    void *p = defero_malloc(kNode);
    const long long cls = defero_class_of(p);
    defero_free(p); // room again where it came from
    return cls;
  };
  EXPECT_LE(hinted(&control_first), r.lower) << "control: a valid 'first' is applied";
  EXPECT_EQ(hinted(&stays_best), r.class_a) << "still 'best' after the bad calls";
  EXPECT_EQ(hinted(&stays_default), r.class_a) << "still the default (auto: near the neighbour)";
}

TEST(CApiPolicy, StatsCountPoliciesAndTheAllocationsTheyServed) {
  static int with_policy, without_policy;
  const Stats s0 = stats();
  __defero_container_policy(&with_policy, "first", 0);
  __defero_container_policy(&with_policy, "best", 12); // the same container again
  const Stats s1 = stats();
  EXPECT_EQ(num(s1, "container_policies"), num(s0, "container_policies") + 1);
  EXPECT_EQ(num(s1, "policy_allocs"), num(s0, "policy_allocs"));

  __defero_hint_container(&with_policy);
  void *a = defero_malloc(kNode);
  __defero_hint_container(&without_policy);
  void *b = defero_malloc(kNode);
  const Stats s2 = stats();
  EXPECT_EQ(num(s2, "policy_allocs"), num(s1, "policy_allocs") + 1)
      << "only the container with a policy of its own counts";
  EXPECT_EQ(num(s2, "hinted_allocs"), num(s1, "hinted_allocs") + 2);
  defero_free(a);
  defero_free(b);
}

// --- middle-sized blocks (4 KiB-32 MiB): the thread's best-fit heap -------

namespace {
/// Two neighbouring middle-sized blocks, of 24 and 40 units of 256 B, and
/// a third above them that keeps them off the slice's top.
struct MidNeighbours {
  char *a = static_cast<char *>(defero_malloc(6000));
  char *b = static_cast<char *>(defero_malloc(10000));
  void *guard = defero_malloc(5000);
  bool ok() const { return a && b && guard && b == a + 6144; }
};
} // namespace

// Freed middle-sized blocks wait in the thread's cache (by length) and go
// back to its region within a few thousand calls when nothing asks for
// their length; there they merge with their free neighbours, and a request
// of another size takes the merged run. Before, each size class kept its
// own high-water mark. Its own process (CApiFreshHeap): a region with no
// free run yet. (A request of a length the cache holds never reaches the
// region; one that does merges the cache first:
// CachedMiddleSizedBlocksMergeBeforeTheTopGrows.)
TEST(CApiFreshHeap, IdleMiddleSizedBlocksMergeAndServeARequestOfAnotherSize) {
  MidNeighbours n;
  ASSERT_TRUE(n.ok()) << "the mid heap hands out neighbouring blocks";
  // Another length, cached first: the requests below never reach the
  // region, so only the cache's sweeps can give a and b back to it.
  void *t = defero_malloc(20000);
  ASSERT_NE(t, nullptr);
  defero_free(t);
  std::memset(n.a, 1, 6000);
  std::memset(n.b, 2, 10000);
  defero_free(n.a);
  defero_free(n.b);
  // That length again and again: the cache's sweeps find a and b idle.
  for (int i = 0; i < 20000; ++i) {
    void *u = defero_malloc(20000);
    ASSERT_EQ(u, t) << "the cache did not serve its own length";
    static_cast<char *>(u)[0] = 1;
    defero_free(u);
  }
  auto *c = static_cast<char *>(defero_malloc(16000)); // 63 units: a and b's joint run
  EXPECT_EQ(c, n.a) << "the two freed blocks did not merge to serve one request";
  ASSERT_GE(defero_usable_size(c), 16000u);
  std::memset(c, 3, 16000);
  EXPECT_EQ(defero_malloc(20000), t) << "the cache was flushed: the sweeps had not merged a and b";
  defero_free(t);
  defero_free(c);
  defero_free(n.guard);
}

// A request that no free run of the mid heap holds merges the cache's
// freed blocks back into the region before the slice's top grows (glibc's
// consolidation): two neighbours freed into the cache serve a request as
// long as both. Before, the top grew and they waited in the cache.
TEST(CApiFreshHeap, CachedMiddleSizedBlocksMergeBeforeTheTopGrows) {
  MidNeighbours n;
  ASSERT_TRUE(n.ok()) << "the mid heap hands out neighbouring blocks";
  defero_free(n.a);
  defero_free(n.b);
  auto *c = static_cast<char *>(defero_malloc(16000)); // 63 units: a and b's joint run
  EXPECT_EQ(c, n.a) << "the slice's top grew while the cache held a run that fits";
  ASSERT_GE(defero_usable_size(c), 16000u);
  std::memset(c, 3, 16000);
  // A length the cache holds is still served from it, top or no top.
  defero_free(n.guard);
  EXPECT_EQ(defero_malloc(5000), n.guard);
  defero_free(n.guard);
  defero_free(c);
}

// A freed middle-sized block of 64 KiB or more gives its memory back at
// once when it is longer than any block that did so before (by half: the
// threshold becomes 1.5 times its length), as glibc unmaps its mapped
// chunks and raises its mapping threshold: a program's growing buffers go
// back as they are outgrown, and a block of a length freed and made again
// keeps its memory for DEFERO_DECAY_MS. Its own process: the thread's
// heap has freed no such block yet.
TEST(CApiFreshHeap, AFreedBlockLongerThanAnyBeforeGivesItsMemoryBackAtOnce) {
  constexpr std::size_t kBlock = 200 << 10;
  auto *guard = static_cast<char *>(defero_malloc(40000)); // (no run merges with the top)
  auto freedResident = [](std::size_t bytes) {
    auto *p = static_cast<char *>(defero_malloc(bytes));
    auto *after = static_cast<char *>(defero_malloc(40000)); // (a live block above it)
    EXPECT_TRUE(p && after);
    std::memset(p, 7, bytes);
    const long long before = releasedBytes();
    defero_free(p);
    const std::size_t resident = residentPages(p, bytes);
    EXPECT_GE(releasedBytes() - before, resident <= 2 ? static_cast<long long>(bytes) - 8192 : 0);
    return std::make_pair(resident, after);
  };
  auto [first, a1] = freedResident(kBlock);
  // (Blocks are whole 256-byte units: the pages a block shares with its
  // neighbours at either end stay.)
  EXPECT_LE(first, 2u) << "the first freed block of 200 KiB stayed resident";
  auto [again, a2] = freedResident(kBlock);
  EXPECT_GE(again, kBlock / 4096 * 9 / 10) << "a block as long as one given back went back too";
  auto [small, a3] = freedResident(48 << 10);
  EXPECT_GE(small, (48u << 10) / 4096 * 9 / 10) << "a block under 64 KiB went back at once";
  auto [longer, a4] = freedResident(2 * kBlock);
  EXPECT_LE(longer, 2u) << "a block twice as long as any given back stayed resident";
  for (char *p : {guard, a1, a2, a3, a4})
    defero_free(p);
}

// A size class that would grow the heap by a span takes a free run of the
// thread's mid heap no longer than 4 KiB instead (memory no middle-sized
// block fits: glibc's small chunks fill such gaps), for the classes whose
// size is whole 256-byte units (512 B to 4 KiB); a longer run it leaves to
// the middle-sized blocks. Its own process: a fresh heap, with no span.
TEST(CApiFreshHeap, AGrowingClassTakesTheMidHeapsGapsOfUpTo4KiB) {
  constexpr std::size_t kBig = 36 << 10; // past the cache: freed straight to the region
  auto *a = static_cast<char *>(defero_malloc(kBig));
  auto *g1 = static_cast<char *>(defero_malloc(kBig));
  auto *b = static_cast<char *>(defero_malloc(kBig));
  auto *g2 = static_cast<char *>(defero_malloc(kBig));
  ASSERT_TRUE(a && g1 && b && g2);
  ASSERT_EQ(g2, a + 3 * kBig) << "the mid heap hands out neighbouring blocks";
  defero_free(a);
  defero_free(b);
  // Two runs of 144 units; blocks of 136 and 124 units leave gaps of 8
  // (2 KiB) and 20 (5 KiB) above them.
  auto *c = static_cast<char *>(defero_malloc(kBig - 2048));
  ASSERT_NE(c, nullptr);
  auto *d = static_cast<char *>(defero_malloc(kBig - 5120));
  ASSERT_NE(d, nullptr);
  ASSERT_NE(c, d);
  const long long live_before = liveBytes();
  auto *p = static_cast<char *>(defero_malloc(2000)); // the 2 KiB class: no span yet
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p, c + kBig - 2048) << "the class did not take the 2 KiB gap";
  EXPECT_EQ(defero_usable_size(p), 2048u);
  std::memset(p, 7, 2048);
  EXPECT_EQ(liveBytes() - live_before, 2048) << "counted as the mid heap's block";
  // The 1 KiB class would fit in the 5 KiB gap, but a middle-sized block
  // would too: it takes a span.
  auto *e = static_cast<char *>(defero_malloc(1000));
  ASSERT_NE(e, nullptr);
  EXPECT_FALSE(e >= a && e < g2 + kBig) << "a 1 KiB block took a run a middle-sized block fits";
  auto *f = static_cast<char *>(defero_malloc(4200)); // 17 units: the 5 KiB gap
  EXPECT_EQ(f, d + kBig - 5120);
  for (int i = 0; i < 2048; ++i)
    ASSERT_EQ(p[i], 7);
  defero_free(p);
  // Freed, it is the mid heap's (its cache): the class takes it again.
  EXPECT_EQ(defero_malloc(2000), p);
  defero_free(p);
  EXPECT_EQ(liveBytes(), live_before + static_cast<long long>(
                                           defero_usable_size(e) + defero_usable_size(f)));
  for (char *q : {c, d, e, f, g1, g2})
    defero_free(q);
}

// A middle-sized block freed by another thread goes home to its owner's
// heap (its lock-free list), which takes it back before its next region
// take: the owner's next requests of that length get it again.
TEST(CApiMid, ABlockFreedByAnotherThreadGoesHomeToItsOwner) {
  constexpr std::size_t kSize = 12000;
  auto *p = static_cast<char *>(defero_malloc(kSize));
  ASSERT_NE(p, nullptr);
  std::memset(p, 5, kSize);
  std::thread([p] { defero_free(p); }).join();
  void *q1 = defero_malloc(kSize), *q2 = defero_malloc(kSize);
  ASSERT_TRUE(q1 && q2);
  EXPECT_TRUE(q1 == p || q2 == p) << "the block another thread freed did not come home";
  defero_free(q1);
  defero_free(q2);
}

// Misuse of a middle-sized block is a one-line error: a second free (by
// its owner, or by another thread while the first is on its way home), a
// pointer inside it.
TEST(CApiMidDeathTest, MisuseIsReported) {
  auto *p = static_cast<char *>(defero_malloc(8000));
  defero_free(p);
  EXPECT_DEATH(defero_free(p), test::fatalLine("defero_free", p, test::kDoubleFree));
  auto *q = static_cast<char *>(defero_malloc(8000));
  EXPECT_DEATH(
      {
        std::thread([q] {
          defero_free(q);
          defero_free(q);
        }).join();
      },
      test::fatalLine("defero_free", q, test::kDoubleFree));
  EXPECT_DEATH(defero_free(q + 256),
               test::fatalLine("defero_free", q + 256, "not a live block of this heap[^\n]*"));
  EXPECT_DEATH(defero_free(q + 16),
               test::fatalLine("defero_free", q + 16, "not a live block of this heap[^\n]*"));
  EXPECT_EQ(defero_usable_size(q + 256), 0u);
  defero_free(q);
}

// Blocks above the size classes up to 32 MiB come from the thread's mid
// heap too (no lock; before, from the large heap's region behind one lock,
// where two threads churning 64 KiB blocks spent 40% of their time
// spinning): neighbouring blocks of one region, the large heap's mappings
// untouched, a freed pair merged for a request of their joint size, and
// one region for every size, so memory a big block freed serves smaller
// ones. Its own process (CApiFreshHeap): a region with no free run yet.
TEST(CApiFreshHeap, BlocksUpTo32MiBComeFromTheThreadsMidHeap) {
  constexpr std::size_t kA = 64 << 10, kB = 3 << 20;
  const long long mapped = num(stats(), "large_mapped_bytes");
  auto *a = static_cast<char *>(defero_malloc(kA));
  auto *b = static_cast<char *>(defero_malloc(kB));
  void *guard = defero_malloc(40000);
  ASSERT_TRUE(a && b && guard);
  EXPECT_EQ(b, a + kA) << "not neighbours in the thread's region";
  EXPECT_EQ(num(stats(), "large_mapped_bytes"), mapped) << "served by the large heap";
  std::memset(a, 1, kA);
  std::memset(b, 2, kB);
  defero_free(a);
  defero_free(b);
  auto *c = static_cast<char *>(defero_malloc(kA + kB - 256));
  EXPECT_EQ(c, a) << "the two freed blocks did not serve one request of their joint size";
  ASSERT_GE(defero_usable_size(c), kA + kB - 256);
  std::memset(c, 3, kA + kB - 256);
  defero_free(c);
  std::vector<char *> small;
  for (int i = 0; i < 40; ++i) { // (6 KiB each: the cache keeps some, the rest cut from a)
    small.push_back(static_cast<char *>(defero_malloc(6000)));
    ASSERT_NE(small.back(), nullptr);
  }
  EXPECT_LT(*std::max_element(small.begin(), small.end()), a + kA + kB)
      << "middle-sized blocks did not reuse the memory the big block freed";
  for (char *s : small)
    defero_free(s);
  // Past 32 MiB: the large heap's.
  void *big = defero_malloc((32 << 20) + 1);
  ASSERT_NE(big, nullptr);
  EXPECT_GT(num(stats(), "large_mapped_bytes"), mapped);
  defero_free(big);
  defero_free(guard);
}

// A block above 32 KiB that another thread frees goes home to its owner's
// mid heap, and a second free of one is reported (as the large heap's
// was: such a block goes straight back to the region, which keeps no
// history of it).
TEST(CApiMid, ABlockAbove32KiBFreedByAnotherThreadGoesHome) {
  auto *p = static_cast<char *>(defero_malloc(150 << 10));
  ASSERT_NE(p, nullptr);
  std::memset(p, 5, 150 << 10);
  std::thread([p] { defero_free(p); }).join();
  void *q1 = defero_malloc(150 << 10), *q2 = defero_malloc(150 << 10);
  ASSERT_TRUE(q1 && q2);
  EXPECT_TRUE(q1 == p || q2 == p) << "the block another thread freed did not come home";
  defero_free(q2);
  EXPECT_DEATH(defero_free(q2),
               test::fatalLine("defero_free", q2, "not a live block of this heap[^\n]*"));
  defero_free(q1);
}

// Two threads churning 64 KiB blocks (malloc_benchmark's 64 KiB mix) each
// in their own mid heap: every block's contents survive, and the live
// bytes come back to where they were.
TEST(CApiMid, TwoThreadsChurningBlocksAbove32KiBKeepTheirContents) {
  const long long live = num(stats(), "live_bytes");
  auto churn = [](unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<std::pair<unsigned char *, std::size_t>> held;
    for (int i = 0; i < 4000; ++i) {
      if (held.size() < 40 && (held.empty() || rng() % 2)) {
        const std::size_t n = rng() % 8 ? 16 + rng() % 240 : (32 << 10) + rng() % (224 << 10);
        auto *b = static_cast<unsigned char *>(defero_malloc(n));
        ASSERT_NE(b, nullptr);
        std::memset(b, static_cast<int>(n & 0xFF), n);
        held.emplace_back(b, n);
      } else {
        const std::size_t k = rng() % held.size();
        const auto [b, n] = held[k];
        for (std::size_t j = 0; j < n; j += 97)
          ASSERT_EQ(b[j], static_cast<unsigned char>(n & 0xFF)) << "a block of " << n;
        defero_free(b);
        held[k] = held.back();
        held.pop_back();
      }
    }
    for (auto [b, n] : held)
      defero_free(b);
  };
  std::thread t1(churn, 1u), t2(churn, 2u);
  t1.join();
  t2.join();
  EXPECT_EQ(num(stats(), "live_bytes"), live);
}

// A length of 32-64 KiB is cached by demand (MidHeap::kDemandUnits): a
// block of it goes to the region (best fit: the lowest of equal runs
// serves first) until the thread asks for the length again after one
// went there; from then on its bin keeps freed blocks (the last freed
// serves first), twice as many each round that runs short, at most 16.
TEST(CApiMid, ALengthOf32To64KiBAskedForAgainIsCachedUpToSixteenBlocks) {
  constexpr std::size_t kLen = 49920, kBlocks = 20; // (195 units)
  std::vector<void *> blocks, guards;
  for (std::size_t i = 0; i < kBlocks; ++i) { // (guards: no two blocks merge)
    blocks.push_back(defero_malloc(kLen));
    guards.push_back(defero_malloc(40000));
    ASSERT_TRUE(blocks.back() && guards.back());
    std::memset(blocks.back(), static_cast<int>(i), kLen);
  }
  const std::vector<void *> made = blocks;
  // A round frees every block in order, then makes as many again.
  auto round = [&] {
    for (void *b : blocks)
      defero_free(b);
    for (void *&b : blocks) {
      b = defero_malloc(kLen);
      ASSERT_NE(b, nullptr);
    }
  };
  round(); // nothing cached yet: the region's lowest run first
  EXPECT_EQ(blocks, made) << "the first round was not served by best fit, lowest first";
  for (int r = 0; r < 5; ++r) // (the cap: 1, 2, 4, 8, 16)
    round();
  const std::vector<void *> freed = blocks; // (the next round's order of frees)
  round();
  // The bin kept the first 16 freed and gives the last of them first; the
  // other four went to the region, which gives the lowest first.
  for (std::size_t i = 0; i < 16; ++i)
    EXPECT_EQ(blocks[i], freed[15 - i]) << "block " << i << " did not come from the cache";
  std::vector<void *> rest(freed.begin() + 16, freed.end());
  std::sort(rest.begin(), rest.end());
  for (std::size_t i = 16; i < kBlocks; ++i)
    EXPECT_EQ(blocks[i], rest[i - 16]) << "block " << i << " was cached past the cap of 16";
  for (void *b : blocks)
    defero_free(b);
  for (void *g : guards)
    defero_free(g);
}

// DEFERO_DECAY_MS=0 (its own process): the memory of middle-sized blocks
// freed and idle goes back to the OS at the heap's next sweep.
// A mid heap that must grow its slice's top first gives back the memory
// of its own idle free runs, whatever their age: a program whose
// middle-sized blocks get longer does not keep the shorter ones' memory
// resident as well. Its own process, DEFERO_DECAY_MS=3600000: no run is
// old enough to go back by age (ctest sets it).
TEST(CApiDecayHour, AMidHeapThatGrowsGivesBackItsIdleRunsFirst) {
  if (!runsWith("DEFERO_DECAY_MS", "3600000"))
    GTEST_SKIP() << "runs with DEFERO_DECAY_MS=3600000 (ctest sets it)";
  TopGrowth t;
  t.run();
  EXPECT_LE(t.resident, TopGrowth::kPages / 10) << "idle runs stayed resident as the top grew";
  EXPECT_GE(t.released, static_cast<long long>(TopGrowth::kPages * 4096 * 9 / 10));
}

// Two classes that take turns filling their spans' free slots, whose pages
// a trim gave back: each turn faults in what the last one's trim gave back,
// and the trims that answer it (SpanHeap::payRoom) give back at most an
// eighth of the heap's memory a delay (pages::kRefaultShare), not as
// much as every turn faults in (malloc_benchmark's 16-4096 B batches ran
// 4x slower so). Its own process, DEFERO_DECAY_MS=3600000: the budget
// covers the whole test (ctest sets it).
TEST(CApiDecayHour, ClassesTakingBackTrimmedPagesInTurnStopGivingEachOthersBack) {
  if (!runsWith("DEFERO_DECAY_MS", "3600000"))
    GTEST_SKIP() << "runs with DEFERO_DECAY_MS=3600000 (ctest sets it)";
  // (176 B blocks first: made later, they would lie over the 64 B spans'
  // free slots, SpanHeap::gangMalloc.)
  PartlyUsedSpans b(176, std::size_t{4} << 20);
  PartlyUsedSpans a(64, std::size_t{4} << 20);
  a.thin(true);
  // The heap grows by 4 MiB of 16 B blocks: the 64 B spans' idle pages go
  // back (growth by fresh spans, answered in full).
  std::vector<void *> grow;
  for (int i = 0; i < (4 << 20) / 16; ++i)
    grow.push_back(defero_malloc(16));
  ASSERT_LE(a.resident(), a.pages() / 2) << "the 64 B spans' idle pages did not go back";
  b.thin(); // (their idle pages resident)
  std::size_t back = 0, gone = 0;
  for (int turn = 0; turn < 8; ++turn) {
    PartlyUsedSpans &mine = turn % 2 ? b : a, &other = turn % 2 ? a : b;
    const std::size_t mine_before = mine.resident(), other_before = other.resident();
    const std::vector<unsigned char *> made = madeAndFilled(mine.size, mine.gone.size() * 9 / 10);
    const std::size_t in = mine.resident() - mine_before;
    const std::size_t out = other_before > other.resident() ? other_before - other.resident() : 0;
    if (turn == 0) {
      EXPECT_GE(out, in / 3) << "the first turn's " << in << " pages faulted in were not answered";
    }
    back += in;
    gone += out;
    checkAndFreeFilled(made, mine.size);
  }
  // (Before the budget: 4,894 pages faulted back in, 4,929 given back.)
  EXPECT_GE(back, 4 * 128u) << "the turns did not fill their spans' trimmed pages";
  const auto budget = static_cast<std::size_t>(statsKey("resident_bytes")) / 8 / 4096;
  // (A trim gives back a span's idle pages whole: a few pages past what
  // it was asked for, each time.)
  EXPECT_LE(gone, budget * 5 / 4 + 16) << back << " pages faulted back in over 8 turns, " << gone
                               << " given back in answer (an eighth of the heap: " << budget << ")";
  a.checkAndFree();
  b.checkAndFree();
  for (void *p : grow)
    defero_free(p);
}

TEST(CApiDecayNow, IdleMiddleSizedBlocksGiveTheirMemoryBack) {
  if (!runsWith("DEFERO_DECAY_MS", "0"))
    GTEST_SKIP() << "runs with DEFERO_DECAY_MS=0 (ctest sets it)";
  constexpr std::size_t kSize = 16384, kBlocks = 256; // 4 MiB: past the 256 KiB cache
  std::vector<char *> blocks;
  for (std::size_t i = 0; i < kBlocks; ++i) {
    blocks.push_back(static_cast<char *>(defero_malloc(kSize)));
    ASSERT_NE(blocks.back(), nullptr);
    std::memset(blocks.back(), 1, kSize);
  }
  const long long before = releasedBytes();
  for (char *b : blocks)
    defero_free(b);
  for (int i = 0; i < 10000; ++i) // (calls of another length: sweeps)
    defero_free(defero_malloc(9000));
  std::vector<unsigned char> vec(kSize / 4096);
  std::size_t resident = 0;
  for (char *b : blocks) {
    ASSERT_EQ(mincore(b, kSize, vec.data()), 0);
    for (unsigned char c : vec)
      resident += c & 1;
  }
  EXPECT_LE(resident, kBlocks * kSize / 4096 / 4) << "pages of freed middle-sized blocks still resident";
  EXPECT_GE(releasedBytes(), before + static_cast<long long>(kBlocks * kSize / 2));
}
