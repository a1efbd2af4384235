// predicate.h - allocation predicates of the Defero paper (section 3) as
// values (for run-time policy) and as tag types (for defero::allocator).
#pragma once

#include <cstdint>
#include <cstring>

#include "defero/abi.h"

namespace defero {

enum class Predicate : std::uint8_t {
  First, ///< the first (lowest) non-empty K-class: temporal locality, fast
  Best,  ///< the hint's own K-class, else the nearest one (alias Match)
  Path,  ///< follow the container's tree-path bits through the class tree
  Auto,  ///< choose per container from what it tells the runtime
};

inline constexpr const char *kPredicateNames = DEFERO_PREDICATES_ACCEPTED;

/// Parses a predicate name; false if `name` is none of kPredicateNames.
inline bool parsePredicate(const char *name, Predicate &out) {
  if (!name)
    return false;
  if (!std::strcmp(name, DEFERO_PREDICATE_FIRST))
    out = Predicate::First;
  else if (!std::strcmp(name, DEFERO_PREDICATE_BEST) || !std::strcmp(name, DEFERO_PREDICATE_MATCH))
    out = Predicate::Best;
  else if (!std::strcmp(name, DEFERO_PREDICATE_PATH))
    out = Predicate::Path;
  else if (!std::strcmp(name, DEFERO_PREDICATE_AUTO))
    out = Predicate::Auto;
  else
    return false;
  return true;
}

inline const char *predicateName(Predicate p) {
  switch (p) {
  case Predicate::First:
    return DEFERO_PREDICATE_FIRST;
  case Predicate::Best:
    return DEFERO_PREDICATE_BEST;
  case Predicate::Path:
    return DEFERO_PREDICATE_PATH;
  case Predicate::Auto:
    return DEFERO_PREDICATE_AUTO;
  }
  return "?";
}

/// Tag types for defero::allocator<T, Partition, Predicate> (paper Fig. 2).
struct First {
  static constexpr Predicate value = Predicate::First;
};
struct Best {
  static constexpr Predicate value = Predicate::Best;
};
using Match = Best;
struct Path {
  static constexpr Predicate value = Predicate::Path;
};
struct Auto {
  static constexpr Predicate value = Predicate::Auto;
};

/// The position of a tree path as a fraction in (0, 1): the direction bits
/// (first step most significant, 1 = right) followed by a terminating 1, so
/// a path that stops at a node sits between its left and right subtrees.
/// Path allocation is monotone in this value.
inline double pathValue(std::uint64_t bits, unsigned depth) {
  double v = 0.5, step = 0.25;
  if (depth > 64)
    depth = 64; // as KBitHeap::mallocPath: only 64 steps are carried
  for (unsigned i = 0; i < depth; ++i, step /= 2)
    v += ((bits >> (depth - 1 - i)) & 1) ? step : -step;
  return v;
}

} // namespace defero
