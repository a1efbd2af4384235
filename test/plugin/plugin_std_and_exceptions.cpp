// The same hints at every -O level, C++ standard and with or without
// exceptions: 2000 neighbor (list, forward_list), 2000 tree (map and set
// insert), 2000 container (map operator[], unordered_map insert).
// RUN: %clangxx -std=c++17 -O1 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.a && env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.a.json %t.a | FileCheck %s --check-prefix=OUT && FileCheck %s < %t.a.json
// RUN: %clangxx -std=c++17 -O3 -fno-exceptions -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.b && env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.b.json %t.b | FileCheck %s --check-prefix=OUT && FileCheck %s < %t.b.json
// RUN: %clangxx -std=c++20 -O0 -fno-exceptions -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.c && env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.c.json %t.c | FileCheck %s --check-prefix=OUT && FileCheck %s < %t.c.json
// RUN: %clangxx -std=c++20 -O2 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.d && env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.d.json %t.d | FileCheck %s --check-prefix=OUT && FileCheck %s < %t.d.json
// RUN: %clangxx -std=c++23 -O3 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.e && env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.e.json %t.e | FileCheck %s --check-prefix=OUT && FileCheck %s < %t.e.json
// RUN: %clangxx -std=c++23 -O1 -fno-exceptions -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.f && env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.f.json %t.f | FileCheck %s --check-prefix=OUT && FileCheck %s < %t.f.json
// OUT: 2000 1000 1000 1000 1000
// CHECK: "hints": {"neighbor": 2000, "tree": 2000, "container": 2000}, "hinted_allocs": 6000,
#include <cstdio>
#include <forward_list>
#include <list>
#include <map>
#include <set>
#include <unordered_map>

int main() {
  std::list<int> l;
  std::forward_list<int> f;
  std::map<int, int> m;
  std::set<int> s;
  std::unordered_map<int, int> u;
  for (int i = 0; i < 1000; ++i) {
    if (i % 2)
      l.push_back(i);
    else
      l.push_front(i);
    f.push_front(i);
    m.insert({i, i});
    m[-1 - i] = i;
    s.insert(i);
    u.insert({i, i});
  }
  std::printf("%zu %zu %zu %zu %d\n", m.size(), s.size(), u.size(), l.size(),
              f.front() + 1);
}
