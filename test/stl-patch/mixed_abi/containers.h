// The interface between the two halves of the mixed-ABI test: one object
// file is compiled with the patched include path, the other without, and
// they hand these containers to each other.
#pragma once
#include <cstddef>
#include <forward_list>
#include <list>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

struct Containers {
  std::list<int> list;
  std::forward_list<long> flist;
  std::map<int, std::string> map;
  std::multiset<int> mset;
  std::unordered_map<std::string, int> umap;
};

// The sizes and member offsets each half sees (they must agree).
struct Layout {
  std::size_t list, flist, map, mset, umap, whole, map_offset, umap_offset;
};

Layout library_layout();
// Inserts n elements of every kind, partly next to what is there.
void library_fill(Containers &c, int n);
// Erases every third element and returns a checksum of what is left.
long library_checksum(const Containers &c);
