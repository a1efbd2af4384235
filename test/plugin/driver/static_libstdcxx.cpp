// -static-libstdc++: libstdc++ linked in, the runtime still linked (a
// shared library), no warning; the hints reach the runtime.
// RUN: %defero_cxx -O1 -static-libstdc++ %s -o %t 2> %t.err
// RUN: count 0 < %t.err
// RUN: llvm-readelf -d %t | FileCheck %s --check-prefix=DYN
// RUN: env DEFERO_STATS_FILE=%t.stats %t
// RUN: FileCheck %s --check-prefix=STATS < %t.stats
// DYN-NOT: libstdc++
// DYN: (NEEDED) Shared library: [libdefero.so{{.*}}]
// DYN-NOT: libstdc++
// STATS: "tree": 20,
#include <map>
int main() {
  std::map<int, int> m;
  for (int i = 0; i < 20; ++i)
    m.insert({i, i});
  return m.size() == 20 ? 0 : 1;
}
