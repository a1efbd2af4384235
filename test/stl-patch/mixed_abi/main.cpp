// The other half of the mixed-ABI test (see containers.h).
#include "containers.h"

#include <cstddef>
#include <cstdio>

int main() {
  const Layout mine{sizeof(std::list<int>), sizeof(std::forward_list<long>),
                    sizeof(std::map<int, std::string>), sizeof(std::multiset<int>),
                    sizeof(std::unordered_map<std::string, int>), sizeof(Containers),
                    offsetof(Containers, map), offsetof(Containers, umap)};
  const Layout theirs = library_layout();
  const bool same = mine.list == theirs.list && mine.flist == theirs.flist &&
                    mine.map == theirs.map && mine.mset == theirs.mset &&
                    mine.umap == theirs.umap && mine.whole == theirs.whole &&
                    mine.map_offset == theirs.map_offset &&
                    mine.umap_offset == theirs.umap_offset;
  std::printf("layouts %s\n", same ? "agree" : "DIFFER");

  Containers c;
  library_fill(c, 300); // nodes made by the other half
  for (int i = 0; i < 300; ++i) { // and by this one, in the same containers
    c.list.push_front(1000 + i);
    c.flist.push_front(i);
    c.map.insert({-i - 1, "m"});
    c.mset.insert(i % 7);
    c.umap.emplace("m" + std::to_string(i), -i);
  }
  Containers moved = std::move(c); // moved and copied across the halves
  Containers copy = moved;
  for (auto it = copy.list.begin(); it != copy.list.end();)
    it = (*it % 3 == 0) ? copy.list.erase(it) : std::next(it);
  copy.map.erase(copy.map.begin(), std::next(copy.map.begin(), 10));
  std::printf("sizes %zu %zu %zu %zu\n", copy.list.size(), copy.map.size(),
              copy.mset.size(), copy.umap.size());
  std::printf("checksum %ld %ld\n", library_checksum(moved), library_checksum(copy));
  return same ? 0 : 1;
}
