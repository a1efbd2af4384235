#include "containers.h"

#include <cstddef>

Layout library_layout() {
  return {sizeof(std::list<int>), sizeof(std::forward_list<long>),
          sizeof(std::map<int, std::string>), sizeof(std::multiset<int>),
          sizeof(std::unordered_map<std::string, int>), sizeof(Containers),
          offsetof(Containers, map), offsetof(Containers, umap)};
}

void library_fill(Containers &c, int n) {
  for (int i = 0; i < n; ++i) {
    c.list.push_back(i);
    c.list.insert(c.list.begin(), -i);
    c.flist.push_front(i * 3L);
    c.map.emplace(i, std::to_string(i));
    c.map[i + n] = "x";
    c.mset.insert(i % 5);
    c.umap["k" + std::to_string(i)] = i;
  }
}

long library_checksum(const Containers &c) {
  long s = 0;
  for (int x : c.list)
    s = s * 31 + x;
  for (long x : c.flist)
    s = s * 7 + x;
  for (const auto &[k, v] : c.map)
    s = s * 13 + k + static_cast<long>(v.size());
  for (int x : c.mset)
    s += x;
  long u = 0;
  for (const auto &[k, v] : c.umap) // order differs between tables: sum
    u += v * static_cast<long>(k.size());
  return s ^ u;
}
