// One flag, -fplugin, runs the pass (at -O0 and -O2): every list and
// forward_list node allocation is hinted, the program prints the same with
// and without the runtime, and the runtime places most nodes in their
// neighbour's K-class.
// RUN: %clangxx -std=c++17 -O0 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.O0
// RUN: %clangxx -std=c++17 -O2 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.O2
// RUN: %clangxx -std=c++17 -O2 %s -o %t.plain
// RUN: %t.plain > %t.expected
// RUN: %t.O0 > %t.out0 && diff %t.expected %t.out0
// RUN: env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.stats0 %t.O0 > %t.out1 && diff %t.expected %t.out1
// RUN: env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.stats2 %t.O2 > %t.out2 && diff %t.expected %t.out2
// RUN: FileCheck %s < %t.stats0
// RUN: FileCheck %s < %t.stats2
// list: 10000 pushes + insert + emplace + 10 from resize; forward_list:
// 10000 push_front + insert_after + emplace_after = 20014 nodes, each hinted.
// CHECK: "hints": {"neighbor": 20014, "tree": 0, "container": 0}, "hinted_allocs": 20014, "hint_same_class": {{1[0-9][0-9][0-9][0-9]}}
#include <cstdio>
#include <forward_list>
#include <iterator>
#include <list>

int main() {
  std::list<int> l;
  std::forward_list<int> f;
  for (int i = 0; i < 10000; ++i) {
    if (i % 2)
      l.push_back(i);
    else
      l.push_front(i);
    f.push_front(i);
  }
  l.insert(std::next(l.begin(), 10), 5); // insert(pos, x)
  l.emplace(l.end(), 7);                 // emplace(pos, x)
  l.resize(l.size() + 10);               // resize growth: emplace_back
  f.insert_after(f.begin(), 3);          // insert_after
  f.emplace_after(f.begin(), 4);         // emplace_after
  long s = 0;
  for (int x : l)
    s += x;
  for (int x : f)
    s += 2 * x;
  std::printf("%ld %zu\n", s, l.size());
}
