// `-x c++ -`: the program read from standard input is compiled with the
// plugin and linked with the runtime, no warning.
// RUN: %defero_cxx -x c++ -O1 - -o %t < %s 2> %t.err
// RUN: count 0 < %t.err
// RUN: env DEFERO_STATS_FILE=%t.stats %t | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --check-prefix=STATS < %t.stats
// The same to an object only: nothing linked, no warning.
// RUN: %defero_cxx -x c++ -c - -o %t.o < %s 2> %t.err
// RUN: count 0 < %t.err
// OUT: 4950
// STATS: "neighbor": 100,
#include <cstdio>
#include <list>
int main() {
  std::list<int> l;
  for (int i = 0; i < 100; ++i)
    l.push_back(i);
  long s = 0;
  for (int x : l)
    s += x;
  std::printf("%ld\n", s);
}
