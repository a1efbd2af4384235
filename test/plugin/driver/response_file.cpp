// @file: a response file that compiles (no link flags: no warning) and one
// that links (the runtime is linked: hints reach it).
// RUN: echo '-std=c++17 -O1 -c %s -o %t.o' > %t.compile.rsp
// RUN: %defero_cxx @%t.compile.rsp 2> %t.err
// RUN: count 0 < %t.err
// RUN: echo '%t.o -o %t' > %t.link.rsp
// RUN: %defero_cxx @%t.link.rsp 2> %t.err
// RUN: count 0 < %t.err
// RUN: env DEFERO_STATS_FILE=%t.stats %t
// RUN: FileCheck %s < %t.stats
// CHECK: "tree": 10,
#include <set>
int main() {
  std::set<int> s;
  for (int i = 0; i < 10; ++i)
    s.insert(i);
  return s.size() == 10 ? 0 : 1;
}
