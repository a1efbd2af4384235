// The plugin and the patched include path together send each hint once:
// the pass leaves alone the container functions that the patched headers
// already made send their hint (and says so in -Rpass=defero).
// RUN: %clangxx -std=c++17 -O2 -fplugin=%shlibdir/DeferoPlugin%shlibext %S/plugin_every_operation.cpp -o %t.plugin
// RUN: %clangxx -std=c++17 -O2 -fplugin=%shlibdir/DeferoPlugin%shlibext -isystem %stlpatch %S/plugin_every_operation.cpp -o %t.both
// RUN: %clangxx -std=c++17 -O0 -fplugin=%shlibdir/DeferoPlugin%shlibext -isystem %stlpatch %S/plugin_every_operation.cpp -o %t.both0
// RUN: env LD_PRELOAD=%libdefero %t.plugin > %t.plugin.out
// RUN: env LD_PRELOAD=%libdefero %t.both | diff %t.plugin.out -
// RUN: env LD_PRELOAD=%libdefero %t.both0 | diff %t.plugin.out -
// RUN: %clangxx -std=c++17 -O0 -fplugin=%shlibdir/DeferoPlugin%shlibext -isystem %stlpatch -Rpass=defero -c -o /dev/null %s 2>&1 | FileCheck %s
// CHECK: remark: std::list insertion: neighbor (from the patched headers) hint [-Rpass=defero]
#include <list>
void f(std::list<int> &l) { l.push_back(1); }
