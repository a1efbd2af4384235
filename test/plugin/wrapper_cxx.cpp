// defero-c++ is a drop-in compiler: it adds the plugin and links the
// runtime (with an rpath, so the program runs without LD_PRELOAD), and
// passes everything else through; --help says what it adds; a missing
// compiler or plugin is a one-line error.
// RUN: %defero_cxx -std=c++17 -O2 %s -o %t
// RUN: env DEFERO_STATS_FILE=%t.stats %t | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --check-prefix=STATS < %t.stats
// RUN: %defero_cxx -std=c++17 -c %s -o %t.o && %clangxx %t.o -o %t.nolib && %t.nolib | FileCheck %s --check-prefix=OUT
// RUN: %defero_cxx --help | FileCheck %s --check-prefix=HELP
// --stl-patch: the patched include path instead of the plugin, same hints.
// RUN: %defero_cxx --stl-patch -std=c++17 -O2 %s -o %t.sp
// RUN: env DEFERO_STATS_FILE=%t.sp.stats %t.sp | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --check-prefix=STATS < %t.sp.stats
// RUN: %defero_cxx --stl-patch -std=c++17 -### -c %s 2>&1 | FileCheck %s --check-prefix=STLARGS
// RUN: sed 's|^stlpatch=.*|stlpatch="/nonexistent/include"|' %defero_cxx > %t.nostl.sh
// RUN: not bash %t.nostl.sh --stl-patch -c %s -o %t.o 2>&1 | FileCheck %s --check-prefix=NOSTL
// RUN: sed 's|^plugin=.*|plugin="/nonexistent/DeferoPlugin.so"|' %defero_cxx > %t.noplugin.sh
// RUN: not bash %t.noplugin.sh -c %s -o %t.o 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
// RUN: sed 's|^compiler=.*|compiler="clang++-nonexistent"|' %defero_cxx > %t.nocompiler.sh
// RUN: not bash %t.nocompiler.sh -c %s -o %t.o 2>&1 | FileCheck %s --check-prefix=NOCOMPILER
// OUT: 499500
// STATS: "neighbor": 1000,
// HELP: usage: defero-c++
// HELP: -fplugin={{.*}}DeferoPlugin.so
// HELP: -ldefero
// HELP: --stl-patch
// HELP: -isystem {{.*}}stl-patch/include
// STLARGS: "-isystem" "{{.*}}stl-patch/include" "-internal-isystem" "{{.*}}/include/c++/12"
// STLARGS-NOT: fplugin
// NOSTL: defero-c++: the patched libstdc++ include path is missing at /nonexistent/include
// NOPLUGIN: defero-c++: the Defero plugin is missing at /nonexistent/DeferoPlugin.so
// NOCOMPILER: defero-c++: clang++-nonexistent not found
#include <cstdio>
#include <list>
int main() {
  std::list<long> l;
  for (long i = 0; i < 1000; ++i)
    l.push_back(i);
  long s = 0;
  for (long x : l)
    s += x;
  std::printf("%ld\n", s);
}
