// tree_model - what the tree kernel's set find costs in a cache model, over
// the real addresses of the set's nodes (deterministic: no timing).
//
// Builds the set as kernels_benchmark's tree kernel does (the same warm-up,
// keys and probes for a seed), then replays its N finds, node by node,
// through a model of this machine's memory: a 32 KiB 8-way L1d, a 1 MiB
// 8-way L2 and a 32 MiB 16-way L3 (LRU, 64-byte lines), a 64-entry L1 DTLB
// and a 2048-entry L2 TLB. A node costs 7 cycles (the load that hits L1
// and the compare), plus 10 if its line comes from L2, 40 from L3 and 300
// from memory, plus 7 for an L2 TLB hit and 40 for a page walk. A node
// reads bytes 16-35 (its child links and an int key: libstdc++'s
// _Rb_tree_node<int>); one that straddles two lines issues both loads at
// once and pays for the dearer (--straddle=serial: for both). No prefetch,
// unless --pair-prefetch: a line that misses L2 brings the other line of
// its aligned 128-byte pair into L2 and L3, uncharged. The first pass of
// finds warms the model, the second is reported (the benchmark's earlier
// allocations and the last compare, an L1 hit, are not modelled). The
// figures are the model's, not the machine's, but with the defaults they
// track it: for the plugin build 1,353 cycles a find (467 ns at 2.9 GHz;
// the kernel measured 475-542) and for the clang++-19 build under mimalloc
// 2,038 (703 ns; measured 722-758), at 3M nodes.
//
// With --layouts it also re-lays the same tree (the same shape, the same
// finds) in layouts no allocator can keep while the tree is built, which
// bound what placement could give: in key order, breadth-first, depth-first
// (preorder), van Emde Boas, and blocks of three nodes (a node and its two
// children in an aligned 128-byte block, the node in the middle slot, so
// that its two lines hold both children), blocks in depth-first order;
// and blocks of three made at insert time (insertTimeBlocks: the same
// inserts, a new leaf in its parent's block when there is room), which is
// the most an allocator could keep of them while the tree rotates.
// Pages are huge (2 MiB) for the TLB when the process's anonymous memory is
// mostly in huge pages (as libdefero's window is), else 4 KiB; --pages
// says which.
//
//   tree_model [--tree-n=N] [--seed=S] [--layouts] [--pages=auto|4k|2m]
//              [--straddle=parallel|serial] [--pair-prefetch]
//
// Prints a line per layout: "tree_model layout=NAME nodes=N pages=4k|2m
// straddle=parallel|serial pair_prefetch=no|yes visits=V l1_misses=A
// l2_misses=B l3_misses=C tlb_walks=D cycles=X", per find: node visits,
// lines missed at each level (a straddling node's two lines count two)
// and model cycles; after each blocks-of-three layout, the share of the
// tree's links inside a block.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tree_kernel_input.h"

namespace {

/// A set-associative LRU cache of 64-byte lines (or of pages: any key).
class Cache {
public:
  Cache(std::size_t entries, unsigned ways)
      : sets_(entries / ways), ways_(ways), tag_(entries, ~std::uint64_t{0}), stamp_(entries) {}
  /// True on a hit; the key is then the set's most recent.
  bool access(std::uint64_t key) {
    std::uint64_t *tag = &tag_[key % sets_ * ways_], *stamp = &stamp_[key % sets_ * ways_];
    ++now_;
    unsigned victim = 0;
    for (unsigned w = 0; w < ways_; ++w) {
      if (tag[w] == key) {
        stamp[w] = now_;
        return true;
      }
      if (stamp[w] < stamp[victim])
        victim = w;
    }
    tag[victim] = key;
    stamp[victim] = now_;
    return false;
  }

private:
  std::size_t sets_;
  unsigned ways_;
  std::vector<std::uint64_t> tag_, stamp_;
  std::uint64_t now_ = 0;
};

/// The set's shape, copied out of its nodes: children's indices, key.
struct Node {
  int left, right, key;
};

struct Tree {
  std::vector<Node> nodes;
  std::vector<std::uint64_t> address; // the real one, or a layout's
  int root = -1;
};

struct Result {
  double visits = 0, l1 = 0, l2 = 0, l3 = 0, walks = 0, cycles = 0;
};

/// The model's two choices no measurement here settles: whether a node
/// whose searched bytes straddle two lines pays for the dearer line only
/// (its two loads issue together: parallel) or for both (serial), and
/// whether a line that misses L2 brings the other line of its aligned pair
/// with it (an adjacent-line prefetcher: pair_prefetch). The calibration
/// (the header) is parallel, no pair prefetch.
struct Model {
  bool serial = false, pair_prefetch = false;
  unsigned page_shift = 12;
};

Result replay(const Tree &t, const std::vector<int> &probe, const Model &m) {
  const unsigned page_shift = m.page_shift;
  Cache l1(32 * 1024 / 64, 8), l2(1024 * 1024 / 64, 8), l3(32 * 1024 * 1024 / 64, 16),
      tlb1(64, 64), tlb2(2048, 16);
  Result r;
  for (int pass = 0; pass < 2; ++pass) {
    r = Result{};
    for (int k : probe) {
      for (int v = t.root; v >= 0; v = t.nodes[v].key < k ? t.nodes[v].right : t.nodes[v].left) {
        const std::uint64_t a = t.address[v];
        double c = 7;
        r.visits += 1;
        if (!tlb1.access(a >> page_shift)) {
          if (tlb2.access(a >> page_shift)) {
            c += 7;
          } else {
            c += 40;
            r.walks += 1;
          }
        }
        const std::uint64_t first = (a + 16) >> 6, last = (a + 35) >> 6;
        double worst = 0, sum = 0;
        for (std::uint64_t line = first; line <= last; ++line) {
          double cost = 0;
          if (!l1.access(line)) {
            r.l1 += 1, cost = 10;
            if (!l2.access(line)) {
              r.l2 += 1, cost = 40;
              if (!l3.access(line))
                r.l3 += 1, cost = 300;
              if (m.pair_prefetch) { // (the other line of the pair, uncharged)
                l2.access(line ^ 1);
                l3.access(line ^ 1);
              }
            }
          }
          worst = std::max(worst, cost);
          sum += cost;
        }
        r.cycles += c + (m.serial ? sum : worst);
      }
    }
  }
  const double n = static_cast<double>(probe.size());
  return Result{r.visits / n, r.l1 / n, r.l2 / n, r.l3 / n, r.walks / n, r.cycles / n};
}

void print(const char *layout, std::size_t n, const Model &m, const Result &r) {
  std::printf("tree_model layout=%s nodes=%zu pages=%s straddle=%s pair_prefetch=%s "
              "visits=%.2f l1_misses=%.2f l2_misses=%.2f l3_misses=%.2f tlb_walks=%.2f "
              "cycles=%.0f\n",
              layout, n, m.page_shift == 21 ? "2m" : "4k", m.serial ? "serial" : "parallel",
              m.pair_prefetch ? "yes" : "no", r.visits, r.l1, r.l2, r.l3, r.walks, r.cycles);
  std::fflush(stdout);
}

/// Copies the set's shape and its nodes' addresses.
template <class Set> Tree copyShape(const Set &s) {
  using Base = std::_Rb_tree_node_base;
  Tree t;
  if (s.empty())
    return t;
  // The root: up from the leftmost node until the node whose parent's
  // parent is itself (the header and the root point at each other).
  auto *x = const_cast<Base *>(s.begin()._M_node);
  while (!(x->_M_parent->_M_parent == x && x->_M_color == std::_S_black))
    x = x->_M_parent;
  auto add = [&](Base *b) {
    t.nodes.push_back(Node{-1, -1, *static_cast<std::_Rb_tree_node<int> *>(b)->_M_valptr()});
    t.address.push_back(reinterpret_cast<std::uintptr_t>(b));
    return static_cast<int>(t.nodes.size() - 1);
  };
  t.root = add(x);
  std::vector<std::pair<Base *, int>> stack{{x, t.root}};
  while (!stack.empty()) {
    auto [b, i] = stack.back();
    stack.pop_back();
    if (b->_M_left) {
      const int j = add(b->_M_left);
      t.nodes[i].left = j;
      stack.push_back({b->_M_left, j});
    }
    if (b->_M_right) {
      const int j = add(b->_M_right);
      t.nodes[i].right = j;
      stack.push_back({b->_M_right, j});
    }
  }
  return t;
}

// --- layouts no allocator keeps (a 40-byte slot each, from one base) ------

constexpr std::uint64_t kBase = std::uint64_t{1} << 40, kSlot = 40;

void layInOrder(Tree &t) {
  std::uint64_t next = 0;
  std::vector<int> stack;
  for (int v = t.root; v >= 0 || !stack.empty();) {
    for (; v >= 0; v = t.nodes[v].left)
      stack.push_back(v);
    v = stack.back();
    stack.pop_back();
    t.address[v] = kBase + kSlot * next++;
    v = t.nodes[v].right;
  }
}

void layBreadthFirst(Tree &t) {
  std::vector<int> queue{t.root};
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const int v = queue[i];
    t.address[v] = kBase + kSlot * i;
    for (int c : {t.nodes[v].left, t.nodes[v].right})
      if (c >= 0)
        queue.push_back(c);
  }
}

void layPreorder(Tree &t) {
  std::uint64_t next = 0;
  std::vector<int> stack{t.root};
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    t.address[v] = kBase + kSlot * next++;
    for (int c : {t.nodes[v].right, t.nodes[v].left})
      if (c >= 0)
        stack.push_back(c);
  }
}

/// van Emde Boas: the top half of the levels of a subtree, then each
/// subtree hanging below them, each laid out the same way.
void layVanEmdeBoas(Tree &t, int v, int height, std::uint64_t &next) {
  if (v < 0)
    return;
  if (height == 1) {
    t.address[v] = kBase + kSlot * next++;
    return;
  }
  const int top = height / 2;
  layVanEmdeBoas(t, v, top, next);
  std::vector<int> frontier{v};
  for (int level = 0; level < top; ++level) {
    std::vector<int> below;
    for (int u : frontier)
      for (int c : {t.nodes[u].left, t.nodes[u].right})
        if (c >= 0)
          below.push_back(c);
    frontier.swap(below);
  }
  for (int u : frontier)
    layVanEmdeBoas(t, u, height - top, next);
}

int height(const Tree &t) {
  int h = 0;
  std::vector<std::pair<int, int>> stack{{t.root, 1}};
  while (!stack.empty()) {
    auto [v, d] = stack.back();
    stack.pop_back();
    h = std::max(h, d);
    for (int c : {t.nodes[v].left, t.nodes[v].right})
      if (c >= 0)
        stack.push_back({c, d + 1});
  }
  return h;
}

/// Blocks of three: a node in slot 1 of an aligned 128-byte block (bytes
/// 40-79: its searched bytes cross the line boundary), its children in
/// slots 0 and 2; the grandchildren head the next blocks, depth first.
void layBlocks(Tree &t) {
  std::uint64_t block = 0;
  std::vector<int> stack{t.root};
  while (!stack.empty()) {
    const int v = stack.back();
    stack.pop_back();
    const std::uint64_t b = kBase + 128 * block++;
    t.address[v] = b + kSlot;
    const int l = t.nodes[v].left, r = t.nodes[v].right;
    if (l >= 0)
      t.address[l] = b;
    if (r >= 0)
      t.address[r] = b + 2 * kSlot;
    for (int c : {r, l})
      if (c >= 0)
        for (int g : {t.nodes[c].right, t.nodes[c].left})
          if (g >= 0)
            stack.push_back(g);
  }
}

/// Blocks of three made at insert time, as an allocator could: the same
/// inserts into a tree of the model's own nodes, rebalanced by libstdc++'s
/// _Rb_tree_insert_and_rebalance; a new leaf takes the slot on its side
/// of its parent's block when its parent is a block's middle and that slot
/// is free, else it is the middle of a new block (blocks in insertion
/// order). No allocator's constraints: the bound of the idea.
Tree insertTimeBlocks(const std::vector<int> &insert) {
  struct Cell : std::_Rb_tree_node_base {
    int key;
    int index;
    std::uint64_t address;
    bool middle, free_left, free_right;
  };
  using Base = std::_Rb_tree_node_base;
  Base header{};
  header._M_color = std::_S_red;
  header._M_left = header._M_right = &header;
  std::vector<Cell *> cells;
  std::uint64_t blocks = 0;
  for (int k : insert) {
    Base *parent = &header;
    bool left = true;
    for (Base *x = header._M_parent; x;) {
      parent = x;
      left = k < static_cast<Cell *>(x)->key;
      x = left ? x->_M_left : x->_M_right;
    }
    // A key already in the set is not inserted (std::set::insert).
    Base *before = parent;
    if (left)
      before = parent == header._M_left ? nullptr : std::_Rb_tree_decrement(parent);
    if (before && before != &header && !(static_cast<Cell *>(before)->key < k))
      continue;
    auto *c = new Cell{};
    c->key = k;
    c->index = static_cast<int>(cells.size());
    c->_M_color = std::_S_red;
    auto *p = parent == &header ? nullptr : static_cast<Cell *>(parent);
    if (p && p->middle && (left ? p->free_left : p->free_right)) {
      c->address = left ? p->address - kSlot : p->address + kSlot;
      (left ? p->free_left : p->free_right) = false;
    } else {
      c->address = kBase + 128 * blocks++ + kSlot;
      c->middle = c->free_left = c->free_right = true;
    }
    std::_Rb_tree_insert_and_rebalance(parent == &header || left, c, parent, header);
    cells.push_back(c);
  }
  Tree t;
  for (Cell *c : cells) {
    auto index = [](Base *b) { return b ? static_cast<Cell *>(b)->index : -1; };
    t.nodes.push_back(Node{index(c->_M_left), index(c->_M_right), c->key});
    t.address.push_back(c->address);
  }
  t.root = header._M_parent ? static_cast<Cell *>(header._M_parent)->index : -1;
  for (Cell *c : cells)
    delete c;
  return t;
}

/// The share of a tree's parent-child links whose two nodes lie in one
/// aligned 128-byte block.
double linksInBlock(const Tree &t) {
  std::size_t links = 0, in = 0;
  for (std::size_t v = 0; v < t.nodes.size(); ++v)
    for (int c : {t.nodes[v].left, t.nodes[v].right})
      if (c >= 0) {
        ++links;
        in += (t.address[v] >> 7) == (t.address[c] >> 7);
      }
  return links ? static_cast<double>(in) / static_cast<double>(links) : 0;
}

/// Whether most of the process's anonymous memory is in huge pages.
bool mostlyHuge() {
  std::ifstream f("/proc/self/smaps_rollup");
  std::string line;
  unsigned long anon = 0, huge = 0;
  while (std::getline(f, line)) {
    if (line.rfind("Anonymous:", 0) == 0)
      anon = std::strtoul(line.c_str() + 10, nullptr, 10);
    else if (line.rfind("AnonHugePages:", 0) == 0)
      huge = std::strtoul(line.c_str() + 14, nullptr, 10);
  }
  return anon > 0 && huge * 2 > anon;
}

[[noreturn]] void usage(const char *why) {
  std::fprintf(stderr,
               "tree_model: %s; usage: tree_model [--tree-n=N(1..20000000)] "
               "[--seed=S] [--layouts] [--pages=auto|4k|2m] [--straddle=parallel|serial] "
               "[--pair-prefetch]\n",
               why);
  std::exit(2);
}

unsigned long long number(const char *arg, const char *s, unsigned long long lo,
                          unsigned long long hi) {
  char *end;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || !std::isdigit(static_cast<unsigned char>(s[0])) || *end || v < lo || v > hi)
    usage((std::string("'") + arg + "' is not valid").c_str());
  return v;
}

} // namespace

int main(int argc, char **argv) {
  std::size_t n = 3000000;
  unsigned seed = 42;
  bool layouts = false;
  int pages = -1; // -1 auto, else the page shift
  Model model;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!std::strncmp(a, "--tree-n=", 9))
      n = number(a, a + 9, 1, 20000000);
    else if (!std::strncmp(a, "--seed=", 7))
      seed = static_cast<unsigned>(number(a, a + 7, 0, 4294967295ull));
    else if (!std::strcmp(a, "--layouts"))
      layouts = true;
    else if (!std::strcmp(a, "--pages=auto"))
      pages = -1;
    else if (!std::strcmp(a, "--pages=4k"))
      pages = 12;
    else if (!std::strcmp(a, "--pages=2m"))
      pages = 21;
    else if (!std::strcmp(a, "--straddle=parallel"))
      model.serial = false;
    else if (!std::strcmp(a, "--straddle=serial"))
      model.serial = true;
    else if (!std::strcmp(a, "--pair-prefetch"))
      model.pair_prefetch = true;
    else
      usage((std::string("'") + a + "' is not valid").c_str());
  }
  // The tree kernel's set (kernels_benchmark.cc, BM_TreeKernel).
  std::set<int> warm;
  const TreeKernelInput in = treeKernelInput(n, seed, warm);
  const std::vector<int> &insert = in.insert, &probe = in.probe;
  std::set<int> set;
  for (int k : insert)
    set.insert(k);

  model.page_shift = pages >= 0 ? static_cast<unsigned>(pages) : mostlyHuge() ? 21 : 12;
  Tree t = copyShape(set);
  print("allocator", set.size(), model, replay(t, probe, model));
  if (!layouts)
    return 0;
  // The re-laid trees are no process's memory: their pages are what the
  // allocator's were.
  layInOrder(t);
  print("in-order", set.size(), model, replay(t, probe, model));
  layBreadthFirst(t);
  print("breadth-first", set.size(), model, replay(t, probe, model));
  layPreorder(t);
  print("preorder", set.size(), model, replay(t, probe, model));
  std::uint64_t next = 0;
  layVanEmdeBoas(t, t.root, height(t), next);
  print("van-emde-boas", set.size(), model, replay(t, probe, model));
  layBlocks(t);
  print("blocks-of-three", set.size(), model, replay(t, probe, model));
  std::printf("tree_model layout=blocks-of-three links_in_block=%.3f\n", linksInBlock(t));
  const Tree cells = insertTimeBlocks(insert);
  print("blocks-of-three-at-insert", cells.nodes.size(), model, replay(cells, probe, model));
  std::printf("tree_model layout=blocks-of-three-at-insert links_in_block=%.3f\n",
              linksInBlock(cells));
  return 0;
}
