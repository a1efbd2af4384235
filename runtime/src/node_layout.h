// node_layout.h - what the runtime knows of libstdc++'s node layouts, in
// one place: where a container's header lies in the container object, and
// how a std::list node links ({next, prev} first). ProcessHeap reads a
// neighbour's links to tell whether the new node goes before it (below it
// in memory) or after it.
//
// treePath walks a red-black tree node's parent links up to the tree's
// header (libstdc++'s _Rb_tree_node_base: {color, parent, left, right}),
// checking each link lies in the window's carved part before reading it:
// about 11.5 instructions a level, on nodes the insert's descent just read.
//
// Cost: linksBefore reads the neighbour's two words and, for a node in the
// middle of a list, its prev's first word (after checking prev is a block
// of the window or the header, so the read cannot fault): about 15
// instructions.
#pragma once

#include <cstdint>

#include "defero/abi.h"
#include "defero/pages/local_heap.h"
#include "defero/pages/page_arena.h"

namespace defero {

/// The hint ABI's kinds (defero/abi.h).
enum : std::uint8_t {
  kHintNone = DEFERO_HINT_NONE,
  kHintNeighbor = DEFERO_HINT_NEIGHBOR,
  kHintTree = DEFERO_HINT_TREE,
  kHintContainer = DEFERO_HINT_CONTAINER,
};

using pages::PageArena;
using pages::PendingHint;

/// How far into a container object its header (the end sentinel, or the
/// tree's header node) may lie: libstdc++'s are at offset 0 (list) and 8
/// (red-black tree).
inline constexpr std::uintptr_t kHeaderReach = 64;

/// Whether p lies in the container object at c (its header).
inline bool inContainer(const void *p, const void *c) {
  return reinterpret_cast<std::uintptr_t>(p) - reinterpret_cast<std::uintptr_t>(c) <
         kHeaderReach;
}

/// Whether a neighbour hint names an empty container: no anchor
/// (std::forward_list's push_front names its first node: none), or an
/// anchor in the container object at c (std::list's header: the plugin and
/// the stl-patch headers name it only when the list is empty, the tail
/// being header->prev). Nothing is read: a nonsense container and anchor
/// cost no fault (a hashtable's hints are container hints, never these).
inline bool namesEmptyContainer(const void *anchor, const void *c) {
  return anchor == nullptr || inContainer(anchor, c);
}

/// Word i of a node the program may be writing in another thread (a
/// neighbour's links, a tree node's parent and left): read unsynchronised
/// by design (the read cannot fault, linksBefore and treePath check first;
/// a torn or stale value only moves where the new node goes). A
/// ThreadSanitizer build reads it uninstrumented, so no suppression is
/// needed and none hides another race.
#if defined(__SANITIZE_THREAD__)
__attribute__((no_sanitize("thread"), noinline)) inline const void *
peekLink(const void *node, unsigned i) {
  return static_cast<const void *const *>(node)[i];
}
#else
inline __attribute__((always_inline)) const void *peekLink(const void *node, unsigned i) {
  return static_cast<const void *const *>(node)[i];
}
#endif

/// Whether the hinted node goes before its anchor in the container's order,
/// so below it in memory: a left child; a list node inserted before its
/// neighbour (push_front, insert(pos) in the middle). A list node is told
/// by libstdc++'s layout {next, prev}: the neighbour's prev links back to
/// it. Only for an anchor that is an 8-byte-aligned block of the window (so
/// its two words, and a prev inside the window, can be read; a node
/// class's nodes are 8-byte aligned, kbit::nodeClassOf).
inline __attribute__((always_inline)) bool linksBefore(const PendingHint &hint) {
  if (hint.kind == kHintTree)
    return hint.side != 0;
  if (hint.kind != kHintNeighbor ||
      (reinterpret_cast<std::uintptr_t>(hint.where) & 7) != 0)
    return false;
  const void *n = hint.where;
  if (inContainer(peekLink(n, 0), hint.container))
    return false; // the tail, appended after
  // The neighbour's prev: the header (the container is live: readable),
  // or a block of the window (8-byte aligned: its first word is in it).
  const void *prev = peekLink(n, 1);
  if (inContainer(prev, hint.container) ||
      ((reinterpret_cast<std::uintptr_t>(prev) & 7) == 0 && PageArena::get().spanOf(prev)))
    return peekLink(prev, 0) == n;
  return false;
}

/// libstdc++'s red-black tree node (_Rb_tree_node_base): where its parent
/// and left links lie (the value follows the four words).
inline constexpr unsigned kRbParentWord = 1, kRbLeftWord = 2;
/// The deepest path treePath follows: a red-black tree of n nodes is at
/// most 2 log2(n + 1) deep, so 62 levels hold any tree of up to 2^31 nodes.
inline constexpr unsigned kRbMaxDepth = 62;

/// The path from the root of `container`'s red-black tree to `node`, one
/// of its nodes: bit i of `bits` is the (i + 1)th step down from the root
/// (1: a right child), so the root's own step is bit 0 and the step into
/// `node` is bit depth - 1 (depth 0: node is the root). False (nothing
/// read out of bounds) when `node` is not an 8-byte-aligned block of the
/// window's carved part, or a link above it leads neither to four words
/// there nor to the header in the container object: a hint that does not
/// name a node of that tree, which is then placed without its path, or a
/// path deeper than kRbMaxDepth. About 11.5 instructions a level (x86-64:
/// two loads, the window test, the header's (p->parent == x), and the step
/// with the depth bound, an xor, a neg and an adc whose sign is the bound:
/// walking up, each step goes in below the ones above it, b = 2b + step,
/// which leaves the root's lowest), two levels an iteration.
inline __attribute__((always_inline)) bool treePath(const void *node, const void *container,
                                                    std::uint64_t &bits, unsigned &depth) {
  // A node: its four words in the window's carved part (read once: it only
  // grows). Not required to be aligned: a link that is not a node's start
  // but lies there is read safely, and gives a path no worse than any
  // hint naming a wrong node.
  const std::uintptr_t base = PageArena::get().base(), carved = PageArena::get().carvedBytes();
  bits = 0;
  depth = 0;
  if (carved < 4 * sizeof(void *))
    return false;
  const std::uintptr_t last = carved - 4 * sizeof(void *);
  std::uintptr_t x = reinterpret_cast<std::uintptr_t>(node);
  if ((x & 7) != 0 || x - base > last)
    return false;
  // A 1 above the steps counts them: it reaches the top bit past
  // kRbMaxDepth steps, where the walk gives up (no counter to increment
  // and test).
  static_assert(kRbMaxDepth == 62);
  std::uint64_t b = 1;
  // p, x's parent, is read before it is tested, and its own parent g
  // before its step is taken: the header's parent is the root, so p is the
  // header (of a container in a block of the window) only if g == x, and
  // only then is p tested for lying in the container object; a p out of
  // the window is tested there. (Tested at every level, a node within
  // kHeaderReach bytes after a container object in the window, its
  // neighbour slot, was taken for the header: the walk stopped there.)
  const auto word = [](std::uintptr_t n, unsigned i) __attribute__((always_inline)) {
    return reinterpret_cast<std::uintptr_t>(peekLink(reinterpret_cast<const void *>(n), i));
  };
  std::uintptr_t p = word(x, kRbParentWord);
  // One level up: 0 to go on, 1 when x is the root, 2 when p is no node.
  const auto up = [&]() __attribute__((always_inline)) -> int {
    if (p - base > last)
      return inContainer(reinterpret_cast<const void *>(p), container) ? 1 : 2;
    const std::uintptr_t g = word(p, kRbParentWord);
    if (g == x) // (a node's parent is never its child)
      return inContainer(reinterpret_cast<const void *>(p), container) ? 1 : 2;
    // The step (1 unless x is p's left child) shifted in below the others.
    std::uintptr_t right = word(p, kRbLeftWord) ^ x;
    bool too_deep;
#if defined(__x86_64__)
    // neg sets the carry for a nonzero operand, adc shifts it in, and its
    // sign is the depth bound's test: three instructions (GCC's setne,
    // movzbl, lea and test are four).
    asm("negq %[r]\n\tadcq %[b], %[b]"
        : [b] "+r"(b), [r] "+r"(right), "=@ccs"(too_deep));
#else
    b = 2 * b + (right != 0);
    too_deep = static_cast<std::int64_t>(b) < 0;
#endif
    if (too_deep)
      return 2;
    x = p;
    p = g;
    return 0;
  };
  int r;
  do // (two levels an iteration: no register moves between them)
    if ((r = up()) == 0)
      r = up();
  while (r == 0);
  if (r == 2)
    return false;
  depth = 63u - static_cast<unsigned>(__builtin_clzll(b));
  bits = b - (std::uint64_t{1} << depth);
  return true;
}

} // namespace defero

