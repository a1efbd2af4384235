// Every container operation of the plugin issue, one by one: the hints the
// runtime received for each (neighbor / tree / container), at -O0 (one-shot
// hints), at -O2 and -O3 (fused with operator new) and with C++20 and
// -fno-exceptions. An operation that makes no node (an existing key, a
// shrinking assign) sends none. Without the runtime the program prints the
// same sizes and sum.
// RUN: %clangxx -std=c++17 -O0 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.O0
// RUN: %clangxx -std=c++17 -O2 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.O2
// RUN: %clangxx -std=c++20 -O3 -fno-exceptions -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.O3
// RUN: env LD_PRELOAD=%libdefero %t.O0 | FileCheck %s --match-full-lines
// RUN: env LD_PRELOAD=%libdefero %t.O2 | FileCheck %s --match-full-lines
// RUN: env LD_PRELOAD=%libdefero %t.O3 | FileCheck %s --match-full-lines
// RUN: %t.O2 | FileCheck %s --check-prefix=ALONE
// ALONE: sizes 20 10 2 2 2 4 1 2 4 sum 77
// CHECK: list.push_back                     neighbor 1 tree 0 container 0
// CHECK-NEXT: list.push_front                    neighbor 1 tree 0 container 0
// CHECK-NEXT: list.emplace_back                  neighbor 1 tree 0 container 0
// CHECK-NEXT: list.emplace_front                 neighbor 1 tree 0 container 0
// CHECK-NEXT: list.insert(pos,v)                 neighbor 1 tree 0 container 0
// CHECK-NEXT: list.insert(pos,3,v)               neighbor 3 tree 0 container 0
// CHECK-NEXT: list.insert(pos,first,last)        neighbor 4 tree 0 container 0
// CHECK-NEXT: list.insert(pos,{a,b})             neighbor 2 tree 0 container 0
// CHECK-NEXT: list.emplace(pos)                  neighbor 1 tree 0 container 0
// CHECK-NEXT: list.resize(+5)                    neighbor 5 tree 0 container 0
// CHECK-NEXT: list.assign(2->8)                  neighbor 6 tree 0 container 0
// CHECK-NEXT: list.assign(8->4)                  neighbor 0 tree 0 container 0
// CHECK-NEXT: forward_list.push_front            neighbor 1 tree 0 container 0
// CHECK-NEXT: forward_list.emplace_front         neighbor 1 tree 0 container 0
// CHECK-NEXT: forward_list.insert_after          neighbor 1 tree 0 container 0
// CHECK-NEXT: forward_list.insert_after(n)       neighbor 3 tree 0 container 0
// CHECK-NEXT: forward_list.insert_after(range)   neighbor 2 tree 0 container 0
// CHECK-NEXT: forward_list.emplace_after         neighbor 1 tree 0 container 0
// CHECK-NEXT: forward_list.resize(9->12)         neighbor 3 tree 0 container 0
// CHECK-NEXT: forward_list.assign(12->16)        neighbor 4 tree 0 container 0
// CHECK-NEXT: map.insert(v)                      neighbor 0 tree 1 container 0
// CHECK-NEXT: map.insert(existing)               neighbor 0 tree 0 container 0
// CHECK-NEXT: map.insert(hint,v)                 neighbor 0 tree 1 container 0
// CHECK-NEXT: map.insert(range)                  neighbor 0 tree 3 container 0
// CHECK-NEXT: map.emplace                        neighbor 0 tree 0 container 1
// CHECK-NEXT: map.emplace_hint                   neighbor 0 tree 0 container 1
// CHECK-NEXT: map.operator[](new)                neighbor 0 tree 0 container 1
// CHECK-NEXT: map.operator[](existing)           neighbor 0 tree 0 container 0
// CHECK-NEXT: map.try_emplace                    neighbor 0 tree 0 container 1
// CHECK-NEXT: map.insert_or_assign               neighbor 0 tree 0 container 1
// CHECK-NEXT: set.insert                         neighbor 0 tree 1 container 0
// CHECK-NEXT: set.emplace                        neighbor 0 tree 0 container 1
// CHECK-NEXT: multiset.insert                    neighbor 0 tree 2 container 0
// CHECK-NEXT: multimap.insert                    neighbor 0 tree 1 container 0
// CHECK-NEXT: multimap.emplace                   neighbor 0 tree 0 container 1
// CHECK-NEXT: unordered_map.insert               neighbor 0 tree 0 container 1
// CHECK-NEXT: unordered_map.emplace              neighbor 0 tree 0 container 1
// CHECK-NEXT: unordered_map.operator[]           neighbor 0 tree 0 container 1
// CHECK-NEXT: unordered_map.try_emplace          neighbor 0 tree 0 container 1
// CHECK-NEXT: unordered_set.insert               neighbor 0 tree 0 container 1
// CHECK-NEXT: unordered_multimap.insert          neighbor 0 tree 0 container 2
// CHECK-NEXT: sizes 20 10 2 2 2 4 1 2 4 sum 77
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <forward_list>
#include <list>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

extern "C" int defero_stats_json(FILE *) __attribute__((weak));

struct Hints {
  long n = 0, t = 0, c = 0;
};

static Hints now() {
  Hints h;
  if (!defero_stats_json)
    return h;
  char *buf = nullptr;
  std::size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  defero_stats_json(f);
  std::fclose(f);
  if (const char *p = std::strstr(buf, "\"hints\": "))
    std::sscanf(p, "\"hints\": {\"neighbor\": %ld, \"tree\": %ld, \"container\": %ld}",
                &h.n, &h.t, &h.c);
  std::free(buf);
  return h;
}

#define OP(name, ...)                                                          \
  do {                                                                         \
    const Hints a = now();                                                     \
    __VA_ARGS__;                                                               \
    const Hints b = now();                                                     \
    std::printf("%-34s neighbor %ld tree %ld container %ld\n", name,           \
                b.n - a.n, b.t - a.t, b.c - a.c);                              \
  } while (0)

int main() {
  std::list<int> l;
  const int src[] = {1, 2, 3, 4};
  OP("list.push_back", l.push_back(1));
  OP("list.push_front", l.push_front(2));
  OP("list.emplace_back", l.emplace_back(3));
  OP("list.emplace_front", l.emplace_front(4));
  OP("list.insert(pos,v)", l.insert(std::next(l.begin()), 5));
  OP("list.insert(pos,3,v)", l.insert(l.end(), 3, 6));
  OP("list.insert(pos,first,last)", l.insert(l.begin(), src, src + 4));
  OP("list.insert(pos,{a,b})", l.insert(l.begin(), {7, 8}));
  OP("list.emplace(pos)", l.emplace(l.begin(), 9));
  OP("list.resize(+5)", l.resize(l.size() + 5));
  std::list<int> small{1, 2};
  OP("list.assign(2->8)", small.assign(8, 1));
  OP("list.assign(8->4)", small.assign(src, src + 4)); // shrinks: no node

  std::forward_list<int> f;
  OP("forward_list.push_front", f.push_front(1));
  OP("forward_list.emplace_front", f.emplace_front(2));
  OP("forward_list.insert_after", f.insert_after(f.begin(), 3));
  OP("forward_list.insert_after(n)", f.insert_after(f.begin(), 3, 4));
  OP("forward_list.insert_after(range)", f.insert_after(f.before_begin(), src, src + 2));
  OP("forward_list.emplace_after", f.emplace_after(f.begin(), 5));
  OP("forward_list.resize(9->12)", f.resize(12));
  OP("forward_list.assign(12->16)", f.assign(16, 0));

  std::map<int, int> m;
  OP("map.insert(v)", m.insert({1, 1}));
  OP("map.insert(existing)", m.insert({1, 2}));
  OP("map.insert(hint,v)", m.insert(m.end(), {2, 2}));
  const std::pair<const int, int> range[] = {{3, 3}, {4, 4}, {5, 5}};
  OP("map.insert(range)", m.insert(range, range + 3));
  OP("map.emplace", m.emplace(6, 6));
  OP("map.emplace_hint", m.emplace_hint(m.end(), 7, 7));
  OP("map.operator[](new)", m[8] = 8);
  OP("map.operator[](existing)", m[8] = 9);
  OP("map.try_emplace", m.try_emplace(9, 9));
  OP("map.insert_or_assign", m.insert_or_assign(10, 10));
  std::set<int> s;
  std::multiset<int> ms;
  std::multimap<int, int> mm;
  OP("set.insert", s.insert(1));
  OP("set.emplace", s.emplace(2));
  OP("multiset.insert", ms.insert(1); ms.insert(1));
  OP("multimap.insert", mm.insert({1, 1}));
  OP("multimap.emplace", mm.emplace(1, 2));

  std::unordered_map<int, int> u;
  std::unordered_set<int> us;
  std::unordered_multimap<int, int> umm;
  OP("unordered_map.insert", u.insert({1, 1}));
  OP("unordered_map.emplace", u.emplace(2, 2));
  OP("unordered_map.operator[]", u[3] = 3);
  OP("unordered_map.try_emplace", u.try_emplace(4, 4));
  OP("unordered_set.insert", us.insert(1));
  OP("unordered_multimap.insert", umm.insert({1, 1}); umm.insert({1, 2}));

  long sum = 0;
  for (int x : l) sum += x;
  for (int x : small) sum += x;
  for (int x : f) sum += x;
  std::printf("sizes %zu %zu %zu %zu %zu %zu %zu %zu %zu sum %ld\n", l.size(), m.size(), s.size(),
              ms.size(), mm.size(), u.size(), us.size(), umm.size(), small.size(), sum);
}
