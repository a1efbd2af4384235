// node_layout.h - what the runtime knows of libstdc++'s node layouts, in
// one place: where a container's header lies in the container object, and
// how a std::list node links ({next, prev} first). ProcessHeap reads a
// neighbour's links to tell whether the new node goes before it (below it
// in memory) or after it.
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

/// Whether the hinted node goes before its anchor in the container's order,
/// so below it in memory: a left child; a list node inserted before its
/// neighbour (push_front, insert(pos) in the middle). A list node is told
/// by libstdc++'s layout {next, prev}: the neighbour's prev links back to
/// it. Only for an anchor that is a 16-byte-aligned block of the window
/// (so its two words, and a prev inside the window, can be read).
inline __attribute__((always_inline)) bool linksBefore(const PendingHint &hint) {
  if (hint.kind == kHintTree)
    return hint.side != 0;
  if (hint.kind != kHintNeighbor ||
      (reinterpret_cast<std::uintptr_t>(hint.where) & 15) != 0)
    return false;
  auto *n = static_cast<const void *const *>(hint.where);
  if (inContainer(n[0], hint.container))
    return false; // the tail, appended after
  // The neighbour's prev: the header (the container is live: readable),
  // or a block of the window (16-byte aligned: its first word is in it).
  const void *prev = n[1];
  if (inContainer(prev, hint.container) ||
      ((reinterpret_cast<std::uintptr_t>(prev) & 15) == 0 && PageArena::get().spanOf(prev)))
    return static_cast<const void *const *>(prev)[0] == n;
  return false;
}

} // namespace defero
