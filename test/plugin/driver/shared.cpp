// -shared: a shared library linked against the runtime (with its rpath),
// no warning; a program using it gets the library's hints.
// RUN: %defero_cxx -O1 -fPIC -shared -DLIBRARY %s -o %t.so 2> %t.err
// RUN: count 0 < %t.err
// RUN: llvm-readelf -d %t.so | FileCheck %s --check-prefix=DYN
// RUN: %defero_cxx -O1 %s %t.so -o %t 2> %t.err
// RUN: count 0 < %t.err
// RUN: env DEFERO_STATS_FILE=%t.stats %t
// RUN: FileCheck %s --check-prefix=STATS < %t.stats
// DYN: (NEEDED) Shared library: [libdefero.so{{.*}}]
// DYN: (RUNPATH) Library runpath: [{{.*}}/lib]
// STATS: "neighbor": 50,
#include <list>
#ifdef LIBRARY
void fill(std::list<int> &l) {
  for (int i = 0; i < 50; ++i)
    l.push_back(i);
}
#else
void fill(std::list<int> &l);
int main() {
  std::list<int> l;
  fill(l);
  return l.size() == 50 ? 0 : 1;
}
#endif
