// -S: assembly with the fused hinted allocation, no warning.
// RUN: %defero_cxx -O2 -S %s -o %t.s 2> %t.err
// RUN: count 0 < %t.err
// RUN: FileCheck %s < %t.s
// CHECK: __defero_new_hinted
#include <list>
void add(std::list<int> &l, int x) { l.push_back(x); }
