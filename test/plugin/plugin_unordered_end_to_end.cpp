// Unordered containers through -fplugin at -O0 and -O2: every node carries
// a container hint; same output with and without plugin and runtime.
// RUN: %clangxx -std=c++17 -O0 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.O0
// RUN: %clangxx -std=c++17 -O2 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.O2
// RUN: %clangxx -std=c++17 -O2 %s -o %t.plain
// RUN: %t.plain > %t.expected
// RUN: %t.O2 > %t.out0 && diff %t.expected %t.out0
// RUN: env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.stats0 %t.O0 > %t.out1 && diff %t.expected %t.out1
// RUN: env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.stats2 %t.O2 > %t.out2 && diff %t.expected %t.out2
// RUN: FileCheck %s < %t.stats0
// RUN: FileCheck %s < %t.stats2
// Nodes: map 3 x 10000 + try_emplace + insert_or_assign, set, multimap and
// multiset 10000 each = 60002.
// CHECK: "hints": {"neighbor": 0, "tree": 0, "container": 60002}, "hinted_allocs": 60002,
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

int main() {
  std::unordered_map<int, int> m;
  std::unordered_set<int> s;
  std::unordered_multimap<int, int> mm;
  std::unordered_multiset<int> ms;
  for (int i = 0; i < 10000; ++i) {
    m.insert({i, i});
    m[i + 100000] = i;
    m.emplace(i + 200000, i);
    s.insert(i);
    mm.emplace(i % 10, i);
    ms.insert(i % 7);
  }
  m.try_emplace(-1, 1);
  m.insert_or_assign(-2, 2);
  long sum = 0;
  for (auto &[k, v] : m)
    sum += k ^ v;
  for (int k : s)
    sum += k;
  for (auto &[k, v] : mm)
    sum += static_cast<long>(k) * v;
  for (int k : ms)
    sum += k;
  std::printf("%ld %zu %zu %zu %zu\n", sum, m.size(), s.size(), mm.size(), ms.size());
}
