// placement_model_test.cpp - the process heap's hinted placement (cells,
// runs, tree zones, continuations, hops between containers) driven through
// the real hint ABI by seeded random operations, every step checked
// against a model (issue 12, item 5).
//
// Several containers live at once: lists laid out as libstdc++'s std::list
// ({next, prev} first, the header {next, prev} at the start of the
// container object) and unbalanced binary search trees laid out as its
// _Rb_tree ({color, parent, left, right}, the header node 8 bytes into the
// container object, its parent the root), each with a node size of its
// own. Nodes come from a neighbour hint (push_back, push_front, insert in
// the middle), a tree hint (parent and side; ascending and descending runs
// too) or a container hint (a node made before its place is known), each
// through the fused __defero_new_hinted or the one-shot hint and
// defero_malloc, chosen at random. Erases, clears (some of them freeing the
// container object, which then comes back elsewhere), unhinted
// defero_malloc/defero_free of 1..5000 bytes, and now and then freeing
// everything churn the spans in between.
//
// Checked after every operation:
// - every block handed out is non-null, 16-byte aligned, has
//   defero_usable_size >= the request, and overlaps no live block (an
//   ordered map of [p, p + usable)); a request of up to 4 KiB, hinted or
//   not, gets exactly its size class's slot (a hinted node is placed in a
//   span of its own class only), and a hinted node lies in the window
//   (defero_class_of >= 0);
// - every block keeps its contents: a pattern from its id beyond the link
//   words, checked when it is freed, on a few random blocks every step and
//   on all of them (with every list and tree walked, each link checked
//   against the model's order) now and then;
// - the stats JSON against the model, as deltas from a baseline: allocs
//   and frees by the calls made, live_bytes by the usable bytes live,
//   hints.neighbor/tree/container by the hints sent, hinted_allocs by the
//   hinted allocations made (one each, by either route, under every
//   policy), hint_same_class by the hinted nodes in their anchor's K-class
//   (exact where the model knows the anchor: neighbour and tree hints, and
//   container hints whose remembered anchor the model can tell);
// - placement (not under DEFERO_POLICY=first, which places nothing), at a
//   random share of the hinted allocations, through a probe: defero_
//   alloc_near(size, anchor) takes the free slot nearest the anchor (and
//   gives its class's word cache back to the bitmaps), and is freed again
//   at once into its span's bitmap (the probe's span is a placed one now).
//   If that slot was within a line or two of the anchor (ceil(128 / slot)
//   slots), the hinted node must land within that reach of its anchor in
//   the anchor's span (README: "A hinted node goes beside its neighbour
//   ... when a slot within a cache line or two is free"). If it was the
//   slot right above the anchor and the hint continues the thread's recent
//   placement (process_heap.h, placeAfterRecent: a neighbour hint naming
//   the recent node, a tree hint naming it as the parent of a right child,
//   a container hint for its container while it is live; the same request
//   size and kind of hint; not under DEFERO_TRACE, which closes that fast
//   path), the node must land exactly there. The model
//   follows the runtime's recent node (and the Auto policy's hop rule,
//   hopsContainers) from the hints alone, and asserts only where it knows
//   them.
// At the end everything is freed and allocs, frees and live_bytes are back
// at the baseline.
//
// placement_model_test_checked builds the same against the checked heap
// (Defero::core_checked: an 8-byte canary after every block, which each
// block's slot holds and free checks).
//
// Links Defero::core, as c_api_test: malloc and operator new stay glibc's,
// so the model's own containers and gtest's allocations never touch the
// Defero heap and its counts can be compared exactly. Single-threaded. A
// failure names the seed, the operation and the last operations before it.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "defero/defero.h"
#include "defero/kbit/size_classes.h"
#include "test_util.h"

namespace test = defero::test;

namespace {

using Stats = std::map<std::string, std::string>;

std::uintptr_t addr(const void *p) { return reinterpret_cast<std::uintptr_t>(p); }

/// The stats JSON, parsed; written into a buffer (no file, no block of the
/// Defero heap).
Stats readStats() {
  char buf[4096] = {};
  Stats s;
  FILE *f = fmemopen(buf, sizeof buf - 1, "w");
  if (!f) {
    ADD_FAILURE() << "fmemopen failed";
    return s;
  }
  const int rc = defero_stats_json(f);
  std::fclose(f);
  EXPECT_EQ(rc, 0);
  const std::string text(buf);
  EXPECT_TRUE(test::Json::parse(text, s)) << "not JSON: " << text;
  return s;
}

long long num(const Stats &s, const char *key) {
  auto it = s.find(key);
  if (it == s.end()) {
    ADD_FAILURE() << "no key " << key << " in the stats JSON";
    return -1;
  }
  // (Unsigned counters: one that went below zero reads as a negative delta.)
  return it->second.rfind('-', 0) == 0 ? std::stoll(it->second)
                                        : static_cast<long long>(std::stoull(it->second));
}

/// The counts the model predicts, as read from the stats JSON.
struct Counts {
  long long allocs = 0, frees = 0, hinted = 0, hints[3] = {}, same = 0, live_bytes = 0;
  static Counts of(const Stats &s) {
    Counts c;
    c.allocs = num(s, "allocs");
    c.frees = num(s, "frees");
    c.hinted = num(s, "hinted_allocs");
    c.hints[0] = num(s, "hints.neighbor");
    c.hints[1] = num(s, "hints.tree");
    c.hints[2] = num(s, "hints.container");
    c.same = num(s, "hint_same_class");
    c.live_bytes = num(s, "live_bytes");
    return c;
  }
};

#ifndef DEFERO_CHECKED
#define DEFERO_CHECKED 0
#endif
/// The checked build's canary after every block (placement_model_test_
/// checked links defero_core_checked): a block's slot holds its usable
/// bytes and then the canary.
constexpr std::size_t kCanaryBytes = DEFERO_CHECKED ? 8 : 0;

/// The slot of a request whose bytes and canary fit kbit::kSmallTableMax:
/// its size class's.
std::size_t classSlot(std::size_t sz) {
  return defero::kbit::kClassBytes[defero::kbit::classOf(sz + kCanaryBytes)];
}

/// The slot a hinted node of sz bytes made by the fused entry may take
/// besides classSlot(sz): its node class's (17-24 and 33-40 bytes, 8-byte
/// aligned; not in the checked build), or 0. (It takes classSlot's when it
/// continues a streak of the request's class, which the one-shot route
/// through defero_malloc, never in a node class, may have begun.)
std::size_t nodeSlot(std::size_t sz) {
  const unsigned cls = defero::kbit::nodeClassOf(sz);
  if (kCanaryBytes != 0 || !defero::kbit::isNodeClass(cls))
    return 0;
  return defero::kbit::kClassBytes[cls];
}

// libstdc++'s _Rb_tree_node_base and a key after it.
struct RbNode {
  int color;
  RbNode *parent, *left, *right;
  std::uint64_t key;
};
static_assert(sizeof(RbNode) == 40 && offsetof(RbNode, parent) == 8 &&
              offsetof(RbNode, left) == 16 && offsetof(RbNode, right) == 24);

// A container object: 64 bytes, as a Defero block (in the window) or
// glibc's. A list's header {next, prev} at 0 (its size at 16); a tree's
// header node at 8 (libstdc++: after the empty comparator; its count at
// 40). The pattern covers the rest of a Defero-allocated one.
constexpr std::size_t kObjectBytes = 64;
constexpr std::uint32_t kListObjectFrom = 24, kTreeObjectFrom = 48;
constexpr std::size_t kTreeHeaderOffset = 8;
// A node's pattern starts after its links (and a tree node's key).
constexpr std::uint32_t kListNodeFrom = 16, kTreeNodeFrom = sizeof(RbNode);

constexpr std::size_t kListSizes[] = {24, 32, 48, 64, 100};
constexpr std::size_t kTreeSizes[] = {40, 48, 64, 100};

enum class Role : std::uint8_t { Plain, ListNode, TreeNode, ListObject, TreeObject };

struct Block {
  std::size_t size;   // requested
  std::size_t usable; // defero_usable_size
  /// The bytes the block spans: its usable bytes and the checked build's
  /// canary (its slot, for a small block).
  std::size_t extent() const { return usable + kCanaryBytes; }
  std::uint64_t seed; // the pattern's
  std::uint32_t from; // the pattern covers [from, size)
  Role role;
  std::size_t counted; // the bytes the statistics count (a gang: its class's)
};

/// A set with O(1) add, remove and random pick.
template <class T> class Bag {
public:
  void add(T x) {
    at_[x] = v_.size();
    v_.push_back(x);
  }
  void remove(T x) {
    auto it = at_.find(x);
    const std::size_t i = it->second;
    at_.erase(it);
    if (i + 1 != v_.size()) {
      v_[i] = v_.back();
      at_[v_[i]] = i;
    }
    v_.pop_back();
  }
  T pick(std::mt19937_64 &rng) const { return v_[rng() % v_.size()]; }
  std::size_t size() const { return v_.size(); }
  bool empty() const { return v_.empty(); }
  const std::vector<T> &items() const { return v_; }

private:
  std::vector<T> v_;
  std::unordered_map<T, std::size_t> at_;
};

struct Container {
  bool tree = false;
  char *obj = nullptr;    // the container object (kObjectBytes)
  bool in_window = false; // obj is a Defero block
  std::size_t node = 0;   // node size, fixed for the container's life
  unsigned generation = 0;
  Bag<void *> nodes;
  // A list's order as the model sees it.
  std::list<void *> order;
  std::unordered_map<void *, std::list<void *>::iterator> pos;
  // A tree's keys.
  std::map<std::uint64_t, RbNode *> keys;

  void **head() const { return reinterpret_cast<void **>(obj); }
  RbNode *header() const { return reinterpret_cast<RbNode *>(obj + kTreeHeaderOffset); }
};

enum Op : unsigned {
  kNewContainer,
  kPushBack,
  kPushFront,
  kInsertMiddle,
  kListByContainerHint,
  kTreeInsert,
  kTreeAscending,
  kTreeDescending,
  kTreeByContainerHint,
  kStreak,
  kErase,
  kClear,
  kMalloc,
  kFree,
  kClearAll,
  kOps
};
constexpr const char *kOpNames[kOps] = {
    "new container", "push_back", "push_front", "insert before a node",
    "list insert by container hint", "tree insert", "tree insert ascending",
    "tree insert descending", "tree insert by container hint", "streak", "erase", "clear",
    "malloc", "free", "free everything"};

/// An operation mix: a weight per operation (but "free everything",
/// which comes once in `clear_all_per` operations), and the share of hinted
/// allocations probed for the placement checks (percent).
struct Mix {
  std::array<unsigned, kOps> weight;
  unsigned probe_pct;
  unsigned clear_all_per;
};

// Weights: new container, push_back, push_front, insert before a node,
// list insert by container hint, tree insert (random key, ascending,
// descending, by container hint), streak, erase, clear, malloc, free. Now
// and then everything is freed (every container and block: spans empty,
// and the next sizes take them over).
// Everything, evenly-ish: the general run.
constexpr Mix kGeneralMix = {{2, 10, 5, 5, 4, 8, 3, 3, 4, 4, 12, 2, 12, 12, 0}, 25, 4000};
// Few erases: the heap grows to the model's bounds (about 12,000 nodes and
// 2,500 other blocks), many spans of each class, trees deep enough for
// their zones, then churns there.
constexpr Mix kGrowMix = {{2, 12, 5, 5, 4, 12, 3, 3, 4, 3, 3, 0, 12, 6, 0}, 25, 20000};
// Long runs into one container (push_backs, ascending inserts, container
// hints in a row) between hops: many continuations to check.
constexpr Mix kStreakMix = {{2, 8, 2, 2, 3, 3, 4, 1, 3, 14, 8, 2, 8, 8, 0}, 60, 4000};
// Lists and trees filled node by node in turn, with churn: hops and the
// placement beside an anchor.
constexpr Mix kInTurnMix = {{3, 12, 6, 8, 5, 10, 2, 2, 5, 0, 14, 3, 10, 10, 0}, 60, 4000};

/// What the probe before a hinted allocation established.
struct Expect {
  enum Kind : std::uint8_t { kNothing, kNear, kExact } kind = kNothing;
  std::uintptr_t anchor = 0;
  std::size_t slot = 0;
  unsigned reach = 0;
};

/// One step, for the failure report.
struct Step {
  std::size_t op = 0;
  const char *what = "";
  int cid = -1;
  int kind = 0;
  bool fused = false;
  std::size_t size = 0;
  std::uintptr_t where = 0, result = 0;
  Expect::Kind expect = Expect::kNothing;
  bool continuation = false;
};

class Driver {
public:
  Driver(std::uint64_t seed, const Mix &mix) : seed_(seed), mix_(mix), rng_(seed) {}

  /// Runs `ops` operations, then frees everything; false after a failed
  /// check (the run stops there, its blocks left as they are).
  bool run(std::size_t ops);

  // Coverage, for the tests' own expectations and the summary line.
  std::size_t exact_checks = 0, near_checks = 0, probes = 0, hinted_by_kind[3] = {},
              fused = 0, one_shot = 0, continuations_seen = 0, predicted_hops = 0,
              max_tree_depth = 0, max_live = 0, plain_allocs = 0, mid_allocs = 0;
  std::string policy;
  bool continues = false; // the hinted fast path (placeAfterRecent) is open

private:
  // --- checks ---------------------------------------------------------------
  std::string context() const;
  void fail(const std::string &what);
  bool ok() const { return !failed_; }

  // --- the model's blocks -------------------------------------------------------
  /// fused: a hinted node made by __defero_new_hinted (nodeSlot).
  void adopt(void *p, std::size_t sz, Role role, std::uint32_t from, bool hinted,
             bool fused = false);
  void release(void *p);
  void *allocPlain(std::size_t sz, Role role, std::uint32_t from);
  bool liveAt(const void *p) const { return live_.count(addr(p)) != 0; }
  void checkPattern(std::uintptr_t a, const Block &b);

  // --- hinted allocation ----------------------------------------------------------
  void *allocHinted(int kind, int cid, const void *container, const void *where, int side,
                    std::size_t sz, Role role, std::uint32_t from, const char *what,
                    bool fresh_container = false);
  Expect probe(const void *anchor, std::size_t sz);
  void bootstrap();

  // --- containers ------------------------------------------------------------------
  int pickContainer(int want_tree); // -1: none; want_tree -1 either
  int newContainer(int want_tree);
  void destroyContainer(int cid);
  void clearContainer(int cid);
  void pushBack(int cid);
  void pushFront(int cid);
  void insertMiddle(int cid);
  void listByContainerHint(int cid);
  void linkListAfter(Container &c, void *after, void *n);
  void unlinkList(Container &c, void *n);
  void treeInsert(int cid, int how); // 0 random key, 1 ascending, 2 descending
  std::uint64_t randomKey() {
    return (std::uint64_t{1} << 61) + (rng_() >> 3) % (std::uint64_t{1} << 62);
  }
  void treeByContainerHint(int cid);
  void treeLink(Container &c, RbNode *z, RbNode *parent, bool left);
  void treeErase(Container &c, RbNode *z);
  void treeExtremes(Container &c);
  void eraseNode(int cid);
  void streak();

  void step(Op op);
  void pushStep(const Step &s) {
    trace_.push_back(s);
    if (trace_.size() > 24)
      trace_.pop_front();
  }
  void note(const char *what, int cid, std::size_t size, std::uintptr_t where, const void *result) {
    pushStep(Step{op_, what, cid, 0, false, size, where, addr(result), Expect::kNothing, false});
  }
  void verifyStats();
  void verifyAll();
  void verifyList(const Container &c, int cid);
  void verifyTree(const Container &c, int cid);
  void teardown();

  std::uint64_t seed_;
  Mix mix_;
  std::mt19937_64 rng_;
  bool failed_ = false;
  std::size_t op_ = 0;
  const char *op_name_ = "start";

  bool places_ = true;    // the default predicate places (not first)
  bool auto_hops_ = true; // the Auto predicate's hop rule applies

  std::map<std::uintptr_t, Block> live_;
  long long live_usable_ = 0;
  std::uint64_t next_seed_ = 1;
  Bag<void *> plains_;
  std::vector<std::unique_ptr<Container>> containers_;
  std::size_t live_nodes_ = 0;

  // The counts since the baseline, and the baseline.
  Counts base_;
  long long allocs_ = 0, frees_ = 0, hinted_ = 0, hints_[3] = {}, same_lo_ = 0, same_hi_ = 0;

  // The runtime's recent placement (LocalHeap::recent) and last hop, as far
  // as the model knows them.
  // Once the model frees the recent node, the runtime may forget it (a
  // span that empties and is made over for another class drops the record
  // that names it: SpanHeap::takeOtherEmptyOrCarve), which the model
  // cannot see: it predicts no continuation of a freed node, and a hop
  // decision that depends on it is unknown (then bootstrap()).
  struct Recent {
    bool known = false;
    const void *node = nullptr, *container = nullptr;
    std::size_t size = 0;
    int kind = 0; // the kind of hint whose streak it continues
    bool node_freed = false;
    bool hop_known = false;
    const void *hop_container = nullptr, *hop_after = nullptr;
  } rec_;
  void noteRecent(const void *container, const void *p, std::size_t sz, int kind) {
    rec_.known = true;
    rec_.node = p;
    rec_.container = container;
    rec_.size = sz;
    rec_.kind = kind;
    rec_.node_freed = false;
  }

  std::deque<Step> trace_;
  Step cur_;
};

// Unique container addresses for bootstrap(): never freed, never reused.
std::vector<std::unique_ptr<void *[]>> &freshObjects() {
  static std::vector<std::unique_ptr<void *[]>> v;
  return v;
}

std::string Driver::context() const {
  std::ostringstream o;
  o << "seed " << seed_ << ", op " << op_ << " (" << op_name_ << "), policy " << policy;
  o << "\nlast steps (op: what [container] kind route size where -> result):";
  for (const Step &s : trace_) {
    o << "\n  " << s.op << ": " << s.what << " [c" << s.cid << "] kind " << s.kind << " "
      << (s.kind ? (s.fused ? "fused" : "one-shot") : "-") << " size " << s.size << " where 0x"
      << std::hex << s.where << " -> 0x" << s.result << std::dec;
    if (s.expect == Expect::kExact)
      o << " (expected right above the anchor)";
    else if (s.expect == Expect::kNear)
      o << " (expected within a line or two)";
    if (s.continuation)
      o << " (continuation predicted)";
  }
  return o.str();
}

void Driver::fail(const std::string &what) {
  if (failed_)
    return;
  failed_ = true;
  ADD_FAILURE() << what << "\n" << context();
}

#define MODEL_CHECK(cond, msg)                                                                    \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      std::ostringstream model_check_msg_;                                                        \
      model_check_msg_ << "check failed: " #cond "\n" << msg;                                      \
      fail(model_check_msg_.str());                                                               \
      return;                                                                                     \
    }                                                                                             \
  } while (0)

#define MODEL_CHECK_R(cond, msg, ret)                                                             \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      std::ostringstream model_check_msg_;                                                        \
      model_check_msg_ << "check failed: " #cond "\n" << msg;                                      \
      fail(model_check_msg_.str());                                                               \
      return ret;                                                                                 \
    }                                                                                             \
  } while (0)

// --- blocks -------------------------------------------------------------------

void Driver::adopt(void *p, std::size_t sz, Role role, std::uint32_t from, bool hinted,
                   bool fused) {
  MODEL_CHECK(p != nullptr, "an allocation of " << sz << " bytes returned null");
  const std::uintptr_t a = addr(p);
  const std::size_t usable = defero_usable_size(p);
  const bool in_node_class = fused && nodeSlot(sz) != 0 && usable == nodeSlot(sz);
  // (The node class's slots are 8-byte aligned, every other block 16.)
  MODEL_CHECK(a % (in_node_class ? 8 : 16) == 0,
              p << " (" << sz << " bytes) is not " << (in_node_class ? 8 : 16) << "-byte aligned");
  MODEL_CHECK(usable >= sz, p << ": usable size " << usable << " < requested " << sz);
  // (A gang, a block laid over another class's free slots when its class
  // would grow, holds the bytes asked for rounded up to that span's slots,
  // at most its class's: SpanHeap::gangBytes. The checked build makes none.)
  const bool gang = kCanaryBytes == 0 && !in_node_class && usable < classSlot(sz);
  if (sz + kCanaryBytes <= defero::kbit::kSmallTableMax)
    MODEL_CHECK(usable + kCanaryBytes == classSlot(sz) || in_node_class || gang,
                p << ": a request of " << sz << " bytes"
                  << (hinted ? fused ? " (hinted, fused)" : " (hinted)" : "") << " got a slot of "
                  << usable + kCanaryBytes << ", its size class's is " << classSlot(sz));
  if (hinted)
    MODEL_CHECK(defero_class_of(p) >= 0, "hinted node " << p << " is not in the window");
  auto next = live_.lower_bound(a);
  MODEL_CHECK(next == live_.end() || next->first >= a + usable + kCanaryBytes,
              "[" << p << ", +" << usable + kCanaryBytes << ") overlaps the live block at 0x"
                  << std::hex << next->first << std::dec << " (+" << next->second.extent()
                  << ")");
  if (next != live_.begin()) {
    auto prev = std::prev(next);
    MODEL_CHECK(prev->first + prev->second.extent() <= a,
                p << " lies inside the live block at 0x" << std::hex << prev->first << std::dec
                  << " (+" << prev->second.extent() << ")");
  }
  const Block b{sz, usable, next_seed_++, from, role,
                gang && sz + kCanaryBytes <= defero::kbit::kSmallTableMax ? classSlot(sz) : usable};
  if (from < sz)
    test::fill(static_cast<char *>(p) + from, sz - from, b.seed);
  live_.emplace(a, b);
  live_usable_ += static_cast<long long>(b.counted);
  max_live = std::max(max_live, live_.size());
}

void Driver::checkPattern(std::uintptr_t a, const Block &b) {
  if (b.from >= b.size)
    return;
  const std::size_t n = b.size - b.from;
  const std::size_t bad = test::checkFill(reinterpret_cast<const char *>(a) + b.from, n, b.seed);
  MODEL_CHECK(bad == n, "the block at 0x" << std::hex << a << std::dec << " (" << b.size
                                           << " bytes, role " << static_cast<int>(b.role)
                                           << ") lost its contents at byte " << b.from + bad);
}

void Driver::release(void *p) {
  auto it = live_.find(addr(p));
  MODEL_CHECK(it != live_.end(), "the model frees " << p << ", which it does not hold");
  checkPattern(it->first, it->second);
  if (!ok())
    return;
  live_usable_ -= static_cast<long long>(it->second.counted);
  live_.erase(it);
  if (p == rec_.node)
    rec_.node_freed = true;
  defero_free(p);
  ++frees_;
}

void *Driver::allocPlain(std::size_t sz, Role role, std::uint32_t from) {
  void *p = defero_malloc(sz);
  ++allocs_;
  ++plain_allocs;
  mid_allocs += sz + kCanaryBytes > defero::kbit::kSmallTableMax;
  adopt(p, sz, role, from, false);
  return ok() ? p : nullptr;
}

// --- hinted allocation -----------------------------------------------------------

Expect Driver::probe(const void *anchor, std::size_t sz) {
  Expect e;
  auto it = live_.find(addr(anchor));
  if (it == live_.end() || it->second.extent() != classSlot(sz))
    return e; // (alloc_near places only beside a block of the request's class)
  ++probes;
  void *q = defero_alloc_near(sz, anchor);
  ++allocs_;
  adopt(q, sz, Role::Plain, 0, false);
  if (!ok())
    return e;
  const std::size_t slot = it->second.extent();
  const unsigned reach = static_cast<unsigned>((128 + slot - 1) / slot);
  const std::uintptr_t a = addr(anchor), b = addr(q);
  const std::uintptr_t dist = a > b ? a - b : b - a;
  if ((a >> 16) == (b >> 16) && dist <= reach * slot) {
    e.kind = b == a + slot ? Expect::kExact : Expect::kNear;
    e.anchor = a;
    e.slot = slot;
    e.reach = reach;
  }
  release(q); // (into its span's bitmap: alloc_near placed in it)
  return e;
}

void *Driver::allocHinted(int kind, int cid, const void *container, const void *where,
                          int side, std::size_t sz, Role role, std::uint32_t from,
                          const char *what, bool fresh_container) {
  cur_ = Step{op_, what, cid, kind, false, sz, addr(where), 0, Expect::kNothing, false};
  const std::size_t key = sz;
  // Does the hint continue the runtime's recent placement (placeAfterRecent)?
  // (maybe: the same, unless the runtime forgot a freed recent node.)
  bool maybe_cont = false;
  if (continues && rec_.known && rec_.size == key && rec_.kind == kind) {
    if (kind == DEFERO_HINT_NEIGHBOR)
      maybe_cont = where == rec_.node;
    else if (kind == DEFERO_HINT_TREE)
      maybe_cont = where == rec_.node && side == 0;
    else if (kind == DEFERO_HINT_CONTAINER)
      maybe_cont = container == rec_.container && liveAt(rec_.node);
  }
  const bool cont = maybe_cont && !rec_.node_freed;
  // A container hint's hop (hopsContainers), when the model can tell.
  bool hop = false, hop_certain = true;
  if (kind == DEFERO_HINT_CONTAINER && places_ && auto_hops_) {
    if (!rec_.known) {
      hop_certain = false;
    } else if (container == rec_.container) {
      hop = false;
    } else if (fresh_container) {
      hop = true; // (never a hop's container before)
    } else if (!rec_.hop_known) {
      hop_certain = false;
    } else if (container != rec_.hop_container) {
      hop = true;
    } else if (rec_.node_freed) {
      hop_certain = false; // (the runtime's recent node: this one, or none)
    } else {
      hop = rec_.node != rec_.hop_after;
    }
  }
  // A container hint's remembered node, live before this allocation (which
  // may reuse its address).
  const bool remembered_live = rec_.known && !rec_.node_freed && liveAt(rec_.node);
  // The anchor a beside placement searches around: the neighbour, the
  // parent, or a container hint's remembered node (the thread's last for
  // that container, while it is live).
  const void *anchor = nullptr;
  if (places_) {
    if (kind != DEFERO_HINT_CONTAINER) {
      auto it = live_.find(addr(where));
      if (it != live_.end() &&
          (it->second.role == Role::ListNode || it->second.role == Role::TreeNode))
        anchor = where;
    } else if (container == rec_.container && remembered_live) {
      anchor = rec_.node;
    }
  }
  // The route: the fused entry, or the one-shot hint and defero_malloc.
  const bool fused_route = rng_() & 1;
  Expect e;
  // (A fused node that may take the node class has no probe: alloc_near
  // serves malloc's classes only, and places beside an anchor of its own.)
  if (anchor && rng_() % 100 < mix_.probe_pct && !(fused_route && nodeSlot(sz) != 0)) {
    e = probe(anchor, sz);
    if (!ok())
      return nullptr;
  }
  void *p;
  if (fused_route) {
    p = __defero_new_hinted(sz, kind, container, where, side);
    ++fused;
  } else {
    switch (kind) {
    case DEFERO_HINT_NEIGHBOR:
      __defero_hint_neighbor(container, where);
      break;
    case DEFERO_HINT_TREE:
      __defero_hint_tree(container, where, side);
      break;
    default:
      __defero_hint_container(container);
      break;
    }
    p = defero_malloc(sz);
    ++one_shot;
  }
  ++allocs_;
  ++hinted_;
  ++hints_[kind - 1];
  ++hinted_by_kind[kind - 1];
  cur_.fused = fused_route;
  cur_.result = addr(p);
  cur_.expect = e.kind;
  cur_.continuation = cont && e.kind == Expect::kExact;
  pushStep(cur_);
  adopt(p, sz, role, from, true, fused_route);
  if (!ok())
    return nullptr;

  // hint_same_class: the node in its anchor's K-class.
  const auto sameClass = [&](const void *a) {
    const long long k = defero_class_of(a);
    return k >= 0 && k == defero_class_of(p);
  };
  if (kind != DEFERO_HINT_CONTAINER) {
    const bool same = sameClass(where);
    same_lo_ += same;
    same_hi_ += same;
  } else if (!places_ || (hop_certain && hop)) {
    // (no anchor: First's slot, or a hop's malloc slot)
  } else if (hop_certain && rec_.known) {
    const void *a = container == rec_.container ? rec_.node : nullptr;
    if (a && remembered_live) {
      const bool same = sameClass(a);
      same_lo_ += same;
      same_hi_ += same;
    } else if (a) {
      same_hi_ += 1; // (a freed node the runtime may still take for live)
    }
  } else {
    same_hi_ += 1;
  }

  // The placement the probe established.
  if (e.kind != Expect::kNothing) {
    const std::uintptr_t a = e.anchor, b = addr(p);
    const std::uintptr_t dist = a > b ? a - b : b - a;
    ++near_checks;
    MODEL_CHECK_R((a >> 16) == (b >> 16) && dist <= e.reach * e.slot,
                  "a hinted node (kind " << kind << ", " << sz << " bytes) landed at " << p
                                         << ", " << static_cast<long long>(b - a)
                                         << " bytes from its anchor 0x" << std::hex << a
                                         << std::dec << ", though a slot within "
                                         << e.reach << " slots of it was free",
                  nullptr);
    if (e.kind == Expect::kExact && cont) {
      ++exact_checks;
      MODEL_CHECK_R(b == a + e.slot,
                    "a hint continuing the recent placement (kind "
                        << kind << ", " << sz << " bytes, recent node 0x" << std::hex << a
                        << std::dec << ") landed at " << p
                        << ", not in the free slot right above it",
                    nullptr);
    }
  }
  if (kind == DEFERO_HINT_NEIGHBOR && where && liveAt(where) &&
      addr(p) == addr(where) + live_.at(addr(where)).extent())
    ++continuations_seen;

  // The runtime's recent node after this allocation.
  if (places_) {
    if (kind == DEFERO_HINT_NEIGHBOR) {
      noteRecent(container, p, sz, kind); // (a continuation notes the container too)
    } else if (kind == DEFERO_HINT_TREE) {
      const bool above =
          where && liveAt(where) && addr(p) == addr(where) + live_.at(addr(where)).extent();
      if (side == 0 && above && (!rec_.known || maybe_cont)) {
        // A continuation keeps the streak's container (placeAfterRecent
        // does not note it); a placement beside the parent notes this one:
        // the same unless the record named another container.
        if (rec_.known && rec_.container == container)
          noteRecent(container, p, sz, kind);
        else
          rec_.known = false;
      } else {
        noteRecent(container, p, sz, kind);
      }
    } else if (!hop_certain) {
      rec_.known = false;
      rec_.hop_known = false;
    } else if (hop) {
      ++predicted_hops;
      rec_.hop_known = !rec_.node_freed; // (else the runtime's node: this one, or none)
      rec_.hop_container = container;
      rec_.hop_after = rec_.node;
    } else {
      noteRecent(container, p, sz, kind);
    }
  }
  return p;
}

/// Makes the recent node and the last hop known to the model: a list's
/// first node for a container object never used before (a neighbour hint
/// always notes its node), then, under Auto, a container hint for another
/// such object (it hops: its container is neither the recent one nor the
/// last hop's), both freed again.
void Driver::bootstrap() {
  auto fresh = [] {
    auto obj = std::make_unique<void *[]>(8);
    obj[0] = obj[1] = obj.get(); // an empty list's header
    void *p = obj.get();
    freshObjects().push_back(std::move(obj));
    return p;
  };
  void *list = fresh(), *other = fresh();
  void *a = allocHinted(DEFERO_HINT_NEIGHBOR, -1, list, list, 0, 48, Role::Plain, 0,
                        "bootstrap: a new list's first node");
  if (!ok())
    return;
  void *b = allocHinted(DEFERO_HINT_CONTAINER, -1, other, nullptr, 0, 48, Role::Plain, 0,
                        "bootstrap: a new container's node", true);
  if (!ok())
    return;
  release(a);
  release(b);
}

// --- containers -----------------------------------------------------------------------

int Driver::pickContainer(int want_tree) {
  std::vector<int> ids;
  for (std::size_t i = 0; i < containers_.size(); ++i)
    if (containers_[i] && (want_tree < 0 || containers_[i]->tree == (want_tree == 1)))
      ids.push_back(static_cast<int>(i));
  if (ids.empty())
    return newContainer(want_tree);
  return ids[rng_() % ids.size()];
}

int Driver::newContainer(int want_tree) {
  constexpr std::size_t kMaxContainers = 10;
  std::size_t slot = containers_.size();
  for (std::size_t i = 0; i < containers_.size(); ++i)
    if (!containers_[i]) {
      slot = i;
      break;
    }
  if (slot == kMaxContainers) // (full: one of them)
    return static_cast<int>(rng_() % kMaxContainers);
  if (slot == containers_.size())
    containers_.emplace_back();
  auto c = std::make_unique<Container>();
  c->tree = want_tree < 0 ? (rng_() & 1) : want_tree == 1;
  c->node = c->tree ? kTreeSizes[rng_() % std::size(kTreeSizes)]
                    : kListSizes[rng_() % std::size(kListSizes)];
  c->in_window = rng_() & 1;
  if (c->in_window) {
    c->obj = static_cast<char *>(
        allocPlain(kObjectBytes, c->tree ? Role::TreeObject : Role::ListObject,
                   c->tree ? kTreeObjectFrom : kListObjectFrom));
    if (!ok())
      return -1;
  } else {
    c->obj = static_cast<char *>(std::aligned_alloc(16, kObjectBytes));
    std::memset(c->obj, 0, kObjectBytes);
  }
  if (c->tree) {
    RbNode *h = c->header();
    h->color = 0;
    h->parent = nullptr;
    h->left = h->right = h;
  } else {
    c->head()[0] = c->head()[1] = c->head();
  }
  containers_[slot] = std::move(c);
  return static_cast<int>(slot);
}

void Driver::clearContainer(int cid) {
  Container &c = *containers_[cid];
  note("clear", cid, c.node, addr(c.obj), nullptr);
  // Free in the container's order (a list walks forward, a tree in order
  // as libstdc++'s _M_erase does it bottom-up: order does not matter).
  std::vector<void *> all = c.nodes.items();
  for (void *n : all) {
    release(n);
    if (!ok())
      return;
  }
  live_nodes_ -= all.size();
  c.nodes = Bag<void *>();
  c.order.clear();
  c.pos.clear();
  c.keys.clear();
  if (c.tree) {
    RbNode *h = c.header();
    h->parent = nullptr;
    h->left = h->right = h;
  } else {
    c.head()[0] = c.head()[1] = c.head();
  }
}

void Driver::destroyContainer(int cid) {
  clearContainer(cid);
  if (!ok())
    return;
  Container &c = *containers_[cid];
  if (c.in_window)
    release(c.obj);
  else
    std::free(c.obj);
  containers_[cid].reset();
}

void Driver::linkListAfter(Container &c, void *after, void *n) {
  void **a = static_cast<void **>(after), **x = static_cast<void **>(n);
  x[0] = a[0];
  x[1] = a;
  static_cast<void **>(a[0])[1] = x;
  a[0] = x;
  c.nodes.add(n);
  ++live_nodes_;
  // The model's order: after `after` (the header: first).
  auto it = after == c.head() ? c.order.begin() : std::next(c.pos.at(after));
  c.pos[n] = c.order.insert(it, n);
}

void Driver::unlinkList(Container &c, void *n) {
  void **x = static_cast<void **>(n);
  static_cast<void **>(x[1])[0] = x[0];
  static_cast<void **>(x[0])[1] = x[1];
  c.order.erase(c.pos.at(n));
  c.pos.erase(n);
  c.nodes.remove(n);
  --live_nodes_;
}

void Driver::pushBack(int cid) {
  Container &c = *containers_[cid];
  void **head = c.head();
  void *tail = head[1]; // (the header itself when the list is empty)
  void *p = allocHinted(DEFERO_HINT_NEIGHBOR, cid, c.obj, tail, 0, c.node, Role::ListNode,
                        kListNodeFrom, "push_back");
  if (!ok())
    return;
  linkListAfter(c, head[1], p);
}

void Driver::pushFront(int cid) {
  Container &c = *containers_[cid];
  void **head = c.head();
  // insert(begin()): the position's node, the tail (the header) if empty.
  void *pos = head[0] == head ? head[1] : head[0];
  void *p = allocHinted(DEFERO_HINT_NEIGHBOR, cid, c.obj, pos, 0, c.node, Role::ListNode,
                        kListNodeFrom, "push_front");
  if (!ok())
    return;
  linkListAfter(c, head, p);
}

void Driver::insertMiddle(int cid) {
  Container &c = *containers_[cid];
  if (c.nodes.empty())
    return pushBack(cid);
  void *pos = c.nodes.pick(rng_);
  void *p = allocHinted(DEFERO_HINT_NEIGHBOR, cid, c.obj, pos, 0, c.node, Role::ListNode,
                        kListNodeFrom, "insert before a node");
  if (!ok())
    return;
  linkListAfter(c, static_cast<void **>(pos)[1], p);
}

void Driver::listByContainerHint(int cid) {
  Container &c = *containers_[cid];
  void *p = allocHinted(DEFERO_HINT_CONTAINER, cid, c.obj, nullptr, 0, c.node, Role::ListNode,
                        kListNodeFrom, "list insert by container hint");
  if (!ok())
    return;
  void *after = c.head()[1];
  if (!c.nodes.empty() && rng_() % 4 == 0)
    after = static_cast<void **>(c.nodes.pick(rng_))[1];
  linkListAfter(c, after, p);
}

void Driver::treeLink(Container &c, RbNode *z, RbNode *parent, bool left) {
  RbNode *h = c.header();
  z->color = 0;
  z->parent = parent;
  z->left = z->right = nullptr;
  if (parent == h) {
    h->parent = z;
    h->left = h->right = z;
  } else if (left) {
    parent->left = z;
    if (parent == h->left)
      h->left = z;
  } else {
    parent->right = z;
    if (parent == h->right)
      h->right = z;
  }
  c.keys[z->key] = z;
  c.nodes.add(z);
  ++live_nodes_;
}

/// The parent and side libstdc++'s _M_insert_ would name for key k.
static void treeSpot(const Container &c, std::uint64_t k, RbNode *&parent, bool &left,
                     std::size_t &depth) {
  RbNode *h = c.header();
  RbNode *x = h->parent;
  parent = h;
  left = true; // (an empty tree: the header, on the left)
  depth = 0;
  while (x) {
    parent = x;
    left = k < x->key;
    x = left ? x->left : x->right;
    ++depth;
  }
}

void Driver::treeInsert(int cid, int how) {
  Container &c = *containers_[cid];
  std::uint64_t k;
  if (how == 1 && !c.keys.empty())
    k = c.keys.rbegin()->first + 1 + rng_() % 8;
  else if (how == 2 && !c.keys.empty())
    k = c.keys.begin()->first - 1 - rng_() % 8;
  else
    k = randomKey();
  if (c.keys.count(k))
    return;
  RbNode *parent;
  bool left;
  std::size_t depth;
  treeSpot(c, k, parent, left, depth);
  max_tree_depth = std::max(max_tree_depth, depth + 1);
  static const char *const names[] = {"tree insert", "tree insert ascending",
                                      "tree insert descending"};
  auto *z = static_cast<RbNode *>(allocHinted(DEFERO_HINT_TREE, cid, c.obj, parent, left ? 1 : 0,
                                              c.node, Role::TreeNode, kTreeNodeFrom, names[how]));
  if (!ok())
    return;
  z->key = k;
  treeLink(c, z, parent, left);
}

void Driver::treeByContainerHint(int cid) {
  Container &c = *containers_[cid];
  // The node first (emplace, operator[]), then its place.
  auto *z = static_cast<RbNode *>(allocHinted(DEFERO_HINT_CONTAINER, cid, c.obj, nullptr, 0,
                                              c.node, Role::TreeNode, kTreeNodeFrom,
                                              "tree insert by container hint"));
  if (!ok())
    return;
  std::uint64_t k;
  do
    k = !c.keys.empty() && rng_() % 2 ? c.keys.rbegin()->first + 1 + rng_() % 8 : randomKey();
  while (c.keys.count(k));
  z->key = k;
  RbNode *parent;
  bool left;
  std::size_t depth;
  treeSpot(c, k, parent, left, depth);
  max_tree_depth = std::max(max_tree_depth, depth + 1);
  treeLink(c, z, parent, left);
}

void Driver::treeExtremes(Container &c) {
  RbNode *h = c.header();
  RbNode *x = h->parent;
  if (!x) {
    h->left = h->right = h;
    return;
  }
  RbNode *lo = x, *hi = x;
  while (lo->left)
    lo = lo->left;
  while (hi->right)
    hi = hi->right;
  h->left = lo;
  h->right = hi;
}

void Driver::treeErase(Container &c, RbNode *z) {
  RbNode *h = c.header();
  const auto transplant = [&](RbNode *u, RbNode *v) {
    if (u->parent == h)
      h->parent = v;
    else if (u == u->parent->left)
      u->parent->left = v;
    else
      u->parent->right = v;
    if (v)
      v->parent = u->parent;
  };
  if (!z->left) {
    transplant(z, z->right);
  } else if (!z->right) {
    transplant(z, z->left);
  } else {
    RbNode *y = z->right;
    while (y->left)
      y = y->left;
    if (y->parent != z) {
      transplant(y, y->right);
      y->right = z->right;
      y->right->parent = y;
    }
    transplant(z, y);
    y->left = z->left;
    y->left->parent = y;
  }
  treeExtremes(c);
  c.keys.erase(z->key);
  c.nodes.remove(z);
  --live_nodes_;
}

void Driver::eraseNode(int cid) {
  Container &c = *containers_[cid];
  if (c.nodes.empty())
    return;
  void *n = c.nodes.pick(rng_);
  note("erase", cid, c.node, addr(n), nullptr);
  if (c.tree)
    treeErase(c, static_cast<RbNode *>(n));
  else
    unlinkList(c, n);
  release(n);
}

void Driver::streak() {
  const unsigned what = static_cast<unsigned>(rng_() % 5);
  const unsigned n = 2 + static_cast<unsigned>(rng_() % 40);
  const int cid = pickContainer(what == 1 || what == 4 ? 1 : what == 0 || what == 3 ? 0 : -1);
  if (cid < 0 || !ok())
    return;
  const bool tree = containers_[cid]->tree;
  for (unsigned i = 0; i < n && ok(); ++i) {
    if (what == 2)
      tree ? treeByContainerHint(cid) : listByContainerHint(cid);
    else if (tree)
      treeInsert(cid, what == 4 ? 2 : 1);
    else
      what == 3 ? pushFront(cid) : pushBack(cid);
  }
}

// --- the operations ------------------------------------------------------------------

void Driver::step(Op op) {
  op_name_ = kOpNames[op];
  constexpr std::size_t kMaxNodes = 12000, kMaxPlains = 2500, kMaxPerContainer = 2500;
  // Bounded memory: inserts become erases past the bounds.
  const bool insert = op >= kPushBack && op <= kStreak;
  if (insert && live_nodes_ > kMaxNodes)
    op = kErase;
  if (op == kMalloc && plains_.size() > kMaxPlains)
    op = kFree;
  op_name_ = kOpNames[op];
  int cid = -1;
  switch (op) {
  case kNewContainer:
    newContainer(-1);
    break;
  case kPushBack:
  case kPushFront:
  case kInsertMiddle:
  case kListByContainerHint:
    cid = pickContainer(0);
    if (cid < 0 || !ok())
      break;
    if (containers_[cid]->tree) // (all slots full: another kind)
      break;
    if (containers_[cid]->nodes.size() > kMaxPerContainer) {
      eraseNode(cid);
      break;
    }
    if (op == kPushBack)
      pushBack(cid);
    else if (op == kPushFront)
      pushFront(cid);
    else if (op == kInsertMiddle)
      insertMiddle(cid);
    else
      listByContainerHint(cid);
    break;
  case kTreeInsert:
  case kTreeAscending:
  case kTreeDescending:
  case kTreeByContainerHint:
    cid = pickContainer(1);
    if (cid < 0 || !ok())
      break;
    if (!containers_[cid]->tree)
      break;
    if (containers_[cid]->nodes.size() > kMaxPerContainer) {
      eraseNode(cid);
      break;
    }
    if (op == kTreeByContainerHint)
      treeByContainerHint(cid);
    else
      treeInsert(cid, op == kTreeInsert ? 0 : op == kTreeAscending ? 1 : 2);
    break;
  case kStreak:
    streak();
    break;
  case kErase:
    cid = pickContainer(-1);
    if (cid >= 0 && ok())
      eraseNode(cid);
    break;
  case kClear:
    cid = pickContainer(-1);
    if (cid < 0 || !ok())
      break;
    if (rng_() % 3 == 0)
      destroyContainer(cid);
    else
      clearContainer(cid);
    break;
  case kMalloc: {
    const unsigned r = static_cast<unsigned>(rng_() % 100);
    const std::size_t sz = r < 60   ? 1 + rng_() % 128
                           : r < 85 ? 129 + rng_() % 896
                                    : 1025 + rng_() % 3976;
    const std::size_t n = live_.size();
    void *p = allocPlain(sz, Role::Plain, 0);
    note("malloc", -1, sz, 0, p);
    if (p && live_.size() == n + 1)
      plains_.add(p);
    break;
  }
  case kClearAll:
    for (std::size_t i = 0; i < containers_.size() && ok(); ++i)
      if (containers_[i])
        destroyContainer(static_cast<int>(i));
    while (!plains_.empty() && ok()) {
      void *p = plains_.items().back();
      plains_.remove(p);
      release(p);
    }
    break;
  case kFree:
    if (!plains_.empty()) {
      void *p = plains_.pick(rng_);
      plains_.remove(p);
      note("free", -1, live_.count(addr(p)) ? live_.at(addr(p)).size : 0, addr(p), nullptr);
      release(p);
    }
    break;
  default:
    break;
  }
}

void Driver::verifyStats() {
  const Counts now = Counts::of(readStats());
  const long long d_allocs = now.allocs - base_.allocs, d_frees = now.frees - base_.frees;
  MODEL_CHECK(d_allocs == allocs_ && d_frees == frees_,
              "allocs/frees since the start: the heap counts " << d_allocs << "/" << d_frees
                                                               << ", the model made " << allocs_
                                                               << "/" << frees_);
  MODEL_CHECK(d_allocs - d_frees == static_cast<long long>(live_.size()),
              "live blocks: the heap's counts give " << d_allocs - d_frees << ", the model holds "
                                                     << live_.size());
  MODEL_CHECK(now.live_bytes - base_.live_bytes == live_usable_,
              "live_bytes rose by " << now.live_bytes - base_.live_bytes
                                    << ", the model's blocks hold " << live_usable_);
  MODEL_CHECK(now.hinted - base_.hinted == hinted_,
              "hinted_allocs rose by " << now.hinted - base_.hinted << ", the model made "
                                       << hinted_ << " hinted allocations");
  static const char *const kinds[3] = {"neighbor", "tree", "container"};
  for (int k = 0; k < 3; ++k)
    MODEL_CHECK(now.hints[k] - base_.hints[k] == hints_[k],
                "hints." << kinds[k] << " rose by " << now.hints[k] - base_.hints[k]
                         << ", the model sent " << hints_[k]);
  const long long same = now.same - base_.same;
  MODEL_CHECK(same >= same_lo_ && same <= same_hi_,
              "hint_same_class rose by " << same << ", the model expects " << same_lo_ << ".."
                                         << same_hi_);
}

void Driver::verifyList(const Container &c, int cid) {
  void **head = c.head();
  void *prev = head;
  auto it = c.order.begin();
  std::size_t n = 0;
  for (void *x = head[0]; x != head; x = static_cast<void **>(x)[0]) {
    MODEL_CHECK(it != c.order.end() && *it == x,
                "list c" << cid << ": node " << n << " is " << x << ", the model has "
                         << (it == c.order.end() ? nullptr : *it));
    MODEL_CHECK(static_cast<void **>(x)[1] == prev,
                "list c" << cid << ": node " << x << "'s prev link was overwritten");
    prev = x;
    ++it;
    ++n;
  }
  MODEL_CHECK(it == c.order.end() && head[1] == prev && n == c.nodes.size(),
              "list c" << cid << ": " << n << " nodes linked, the model has " << c.nodes.size());
}

void Driver::verifyTree(const Container &c, int cid) {
  RbNode *h = c.header();
  RbNode *root = h->parent;
  if (!root) {
    MODEL_CHECK(c.keys.empty() && h->left == h && h->right == h,
                "tree c" << cid << ": empty, the model has " << c.keys.size() << " keys");
    return;
  }
  MODEL_CHECK(root->parent == h, "tree c" << cid << ": the root's parent is not the header");
  std::vector<RbNode *> stack;
  auto it = c.keys.begin();
  RbNode *first = nullptr, *last = nullptr;
  for (RbNode *x = root; x || !stack.empty();) {
    while (x) {
      if (x->left)
        MODEL_CHECK(x->left->parent == x, "tree c" << cid << ": a left link broke at " << x);
      if (x->right)
        MODEL_CHECK(x->right->parent == x, "tree c" << cid << ": a right link broke at " << x);
      stack.push_back(x);
      x = x->left;
    }
    x = stack.back();
    stack.pop_back();
    MODEL_CHECK(it != c.keys.end() && it->second == x && it->first == x->key,
                "tree c" << cid << ": in order, node " << x << " (key " << x->key
                         << ") is not the model's next");
    first = first ? first : x;
    last = x;
    ++it;
    x = x->right;
  }
  MODEL_CHECK(it == c.keys.end() && h->left == first && h->right == last,
              "tree c" << cid << ": the walk and the model differ at the end");
}

void Driver::verifyAll() {
  for (std::size_t i = 0; i < containers_.size() && ok(); ++i)
    if (containers_[i]) {
      if (containers_[i]->tree)
        verifyTree(*containers_[i], static_cast<int>(i));
      else
        verifyList(*containers_[i], static_cast<int>(i));
    }
  for (const auto &[a, b] : live_) {
    checkPattern(a, b);
    if (!ok())
      return;
  }
}

void Driver::teardown() {
  op_name_ = "teardown";
  for (std::size_t i = 0; i < containers_.size() && ok(); ++i)
    if (containers_[i])
      destroyContainer(static_cast<int>(i));
  while (!plains_.empty() && ok()) {
    void *p = plains_.items().back();
    plains_.remove(p);
    release(p);
  }
  if (!ok())
    return;
  MODEL_CHECK(live_.empty(), live_.size() << " blocks left in the model");
  verifyStats();
  if (!ok())
    return;
  const Counts end = Counts::of(readStats());
  MODEL_CHECK(end.allocs - base_.allocs == end.frees - base_.frees &&
                  end.live_bytes == base_.live_bytes,
              "after freeing everything: allocs +" << end.allocs - base_.allocs << ", frees +"
                                                   << end.frees - base_.frees << ", live_bytes "
                                                   << end.live_bytes << " (baseline "
                                                   << base_.live_bytes << ")");
}

bool Driver::run(std::size_t ops) {
  // The thread's heap exists before the baseline (the first call makes it).
  defero_free(defero_malloc(1));
  const Stats s = readStats();
  policy = s.count("policy") ? s.at("policy") : "?";
  places_ = policy != "first";
  // A traced heap takes the full path for every call: no continuation.
  const char *trace = std::getenv("DEFERO_TRACE");
  continues = places_ && !(trace && *trace);
  auto_hops_ = policy == "auto";
  base_ = Counts::of(s);
  bootstrap();
  unsigned total = 0;
  for (unsigned w : mix_.weight)
    total += w;
  for (op_ = 1; op_ <= ops && ok(); ++op_) {
    if (places_ && (!rec_.known || (auto_hops_ && !rec_.hop_known)))
      bootstrap();
    unsigned r = static_cast<unsigned>(rng_() % total), op = 0;
    while (r >= mix_.weight[op])
      r -= mix_.weight[op++];
    step(rng_() % mix_.clear_all_per == 0 ? kClearAll : static_cast<Op>(op));
    if (!ok())
      break;
    verifyStats();
    // A few blocks' contents every step, all of them now and then.
    for (int i = 0; i < 4 && ok() && !live_.empty(); ++i) {
      auto it = live_.lower_bound(live_.begin()->first +
                                  rng_() % (live_.rbegin()->first - live_.begin()->first + 1));
      if (it != live_.end())
        checkPattern(it->first, it->second);
    }
    if (op_ % 1024 == 0)
      verifyAll();
  }
  if (ok()) {
    verifyAll();
    teardown();
  }
  return ok();
}

// --- the tests ------------------------------------------------------------------------

struct Case {
  std::uint64_t seed;
  std::size_t ops;
  const Mix *mix;
  const char *mix_name;
};

void PrintTo(const Case &c, std::ostream *os) {
  *os << "seed " << c.seed << ", " << c.ops << " ops, mix " << c.mix_name;
}

std::string runName(const ::testing::TestParamInfo<Case> &info) {
  return "seed" + std::to_string(info.param.seed);
}

void summary(const Case &r, const Driver &d, double ms) {
  std::printf("[ model    ] %s mix, seed %llu: %zu ops in %.0f ms, policy %s; hinted %zu/%zu/%zu "
              "(neighbour/tree/container), %zu fused, %zu one-shot; %zu probes, %zu beside "
              "checks, %zu exact continuations checked, %zu push_backs right above their tail, "
              "%zu hops predicted; deepest tree %zu, most blocks live %zu, %zu unhinted "
              "(%zu mid-sized)\n",
              r.mix_name, static_cast<unsigned long long>(r.seed), r.ops, ms, d.policy.c_str(),
              d.hinted_by_kind[0], d.hinted_by_kind[1], d.hinted_by_kind[2], d.fused, d.one_shot,
              d.probes, d.near_checks, d.exact_checks, d.continuations_seen, d.predicted_hops,
              d.max_tree_depth, d.max_live, d.plain_allocs, d.mid_allocs);
  std::fflush(stdout);
}

template <class F> double timed(F f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Runs r's operations on d, each checked against the model, and prints
/// the run's summary; false if a check failed.
bool runCase(const Case &r, Driver &d) {
  bool passed = false;
  const double ms = timed([&] { passed = d.run(r.ops); });
  summary(r, d, ms);
  return passed;
}

class PlacementModel : public ::testing::TestWithParam<Case> {};

// The general mix: every block disjoint, aligned, of its size class and
// intact; the lists and trees intact; the stats counting every call, hint
// and hinted allocation once; back to the baseline at the end.
TEST_P(PlacementModel, RandomHintedOpsKeepBlocksDisjointIntactAndCounted) {
  const Case r = GetParam();
  Driver d(r.seed, *r.mix);
  ASSERT_TRUE(runCase(r, d));
  EXPECT_GT(d.hinted_by_kind[0], r.ops / 10);
  EXPECT_GT(d.hinted_by_kind[1], r.ops / 20);
  EXPECT_GT(d.hinted_by_kind[2], r.ops / 40);
  EXPECT_GT(d.fused, 0u);
  EXPECT_GT(d.one_shot, 0u);
  EXPECT_GT(d.mid_allocs, 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, PlacementModel,
                         ::testing::Values(Case{1, 25000, &kGeneralMix, "general"},
                                           Case{2, 25000, &kGeneralMix, "general"},
                                           Case{3, 25000, &kGrowMix, "grow"},
                                           Case{4, 25000, &kGrowMix, "grow"}),
                         runName);

class PlacementModelContinuation : public ::testing::TestWithParam<Case> {};

// Runs into one container between hops: a hint continuing the thread's
// recent placement takes the free slot right above its recent node, by
// either route, whatever came between.
TEST_P(PlacementModelContinuation, AContinuationTakesTheFreeSlotRightAboveTheRecentNode) {
  const Case r = GetParam();
  Driver d(r.seed, *r.mix);
  ASSERT_TRUE(runCase(r, d));
  if (!d.continues)
    GTEST_SKIP() << "policy " << d.policy << (d.policy == "first" ? "" : " with DEFERO_TRACE")
                 << ": the hinted fast path is closed, no continuation to check";
  EXPECT_GT(d.exact_checks, r.ops / 20) << "too few continuations checked to mean anything";
  EXPECT_GT(d.continuations_seen, r.ops / 10);
}

INSTANTIATE_TEST_SUITE_P(Seeds, PlacementModelContinuation,
                         ::testing::Values(Case{11, 20000, &kStreakMix, "streak"},
                                           Case{12, 20000, &kStreakMix, "streak"}),
                         runName);

class PlacementModelBeside : public ::testing::TestWithParam<Case> {};

// Containers filled node by node in turn with churn (hops, holes): a
// hinted node whose anchor has a free slot within a line or two lands
// within that reach, in the anchor's span.
TEST_P(PlacementModelBeside, AHintedNodeLandsWithinALineOrTwoOfItsAnchorWhenASlotThereIsFree) {
  const Case r = GetParam();
  Driver d(r.seed, *r.mix);
  ASSERT_TRUE(runCase(r, d));
  if (d.policy == "first")
    GTEST_SKIP() << "DEFERO_POLICY=first places nothing: no placement to check";
  EXPECT_GT(d.near_checks, r.ops / 10) << "too few placements checked to mean anything";
  if (d.policy == "auto") {
    EXPECT_GT(d.predicted_hops, r.ops / 50) << "too few hops between containers";
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, PlacementModelBeside,
                         ::testing::Values(Case{21, 20000, &kInTurnMix, "in-turn"},
                                           Case{22, 20000, &kInTurnMix, "in-turn"}),
                         runName);

} // namespace
