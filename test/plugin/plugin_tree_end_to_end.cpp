// Trees through -fplugin at -O0 and -O2: insertions with a known position
// send tree hints (parent and side), emplace-style ones container hints;
// same output with and without the plugin and the runtime.
// RUN: %clangxx -std=c++17 -O0 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.O0
// RUN: %clangxx -std=c++17 -O2 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.O2
// RUN: %clangxx -std=c++17 -O2 %s -o %t.plain
// RUN: %t.plain > %t.expected
// RUN: %t.O2 > %t.out0 && diff %t.expected %t.out0
// RUN: env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.stats0 %t.O0 > %t.out1 && diff %t.expected %t.out1
// RUN: env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.stats2 %t.O2 > %t.out2 && diff %t.expected %t.out2
// RUN: FileCheck %s < %t.stats0
// RUN: FileCheck %s < %t.stats2
// tree: 3 x 10000 inserts (map insert, set insert with a hint, multiset);
// container: 10000 emplace + 10000 operator[] + try_emplace +
// insert_or_assign + emplace_hint.
// CHECK: "hints": {"neighbor": 0, "tree": 30000, "container": 20003}, "hinted_allocs": 50003,
#include <cstdio>
#include <map>
#include <set>

int main() {
  std::map<int, int> m;
  std::set<int> s;
  std::multiset<int> ms;
  std::multimap<int, int> mm;
  for (int i = 0; i < 10000; ++i) {
    const int k = (i * 7919) % 10007;
    m.insert({k, i});
    s.insert(s.end(), k);
    ms.insert(k % 100);
    mm.emplace(k % 50, i);
    m[k + 20000] = i;
  }
  m.try_emplace(-1, 5);
  m.insert_or_assign(-2, 6);
  m.emplace_hint(m.begin(), -3, 7);
  long sum = 0;
  for (auto &[k, v] : m)
    sum += k + v;
  for (int k : s)
    sum += k;
  for (int k : ms)
    sum += k;
  for (auto &[k, v] : mm)
    sum += static_cast<long>(k) * v;
  std::printf("%ld %zu %zu %zu %zu\n", sum, m.size(), s.size(), ms.size(), mm.size());
}
