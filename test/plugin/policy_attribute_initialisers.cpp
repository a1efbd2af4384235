// [[defero::policy]] whatever makes the container: a default member
// initialiser that returns it (`= make()`), aggregate initialisation,
// `auto`, class template argument deduction, a plain local.
// RUN: %clangxx -std=c++20 -O2 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t
// RUN: env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.json %t | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s < %t.json
// RUN: %clangxx -std=c++20 -O0 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.O0
// RUN: env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.O0.json %t.O0 | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s < %t.O0.json
// OUT: 509
// Six containers with a policy, and every node of theirs served under it:
// those make() and make_map() create right in the container (the policy is
// set before the call), the 500 pushed and the map's operator[] node.
// CHECK: "hinted_allocs": 509,
// CHECK-SAME: "container_policies": 6, "policy_allocs": 509,
#include <cstdio>
#include <list>
#include <map>

std::list<int> make() { return std::list<int>{1, 2, 3}; }
std::map<int, int> make_map() { return {{1, 1}}; }

struct Member {
  [[defero::policy("best")]] std::list<int> l = make();
};
struct Aggregate {
  int a;
  [[defero::policy("first")]] std::map<int, int> m;
};

int main() {
  Member s;
  Aggregate g{1, make_map()};
  [[defero::policy("path", 16)]] std::list<int> local = make();
  [[defero::policy("best")]] auto deduced = std::list<int>{};
  [[defero::policy("best")]] std::list ctad{7};
  [[defero::policy("first")]] std::list<int> plain;
  for (int i = 0; i < 100; ++i) {
    s.l.push_back(i);
    local.push_back(i);
    deduced.push_back(i);
    ctad.push_back(i);
    plain.push_back(i);
  }
  g.m[2] = 2;
  std::printf("%zu\n", s.l.size() + g.m.size() + local.size() + deduced.size() +
                           ctad.size() + plain.size());
}
