// -c: an object with the plugin's hints and nothing linked, no warning.
// RUN: %defero_cxx -O0 -c %s -o %t.o 2> %t.err
// RUN: count 0 < %t.err
// RUN: llvm-nm %t.o | FileCheck %s
// CHECK: w __defero_hint_neighbor
#include <list>
void add(std::list<int> &l, int x) { l.push_back(x); }
