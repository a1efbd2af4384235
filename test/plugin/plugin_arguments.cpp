// The plugin's arguments: `disable` turns it off (no hint in the IR);
// anything else is an error naming the accepted ones.
// RUN: %clangxx -std=c++17 -O0 -fplugin=%shlibdir/DeferoPlugin%shlibext -S -emit-llvm %s -o - | FileCheck %s --check-prefix=ON
// RUN: %clangxx -std=c++17 -O0 -fplugin=%shlibdir/DeferoPlugin%shlibext -fplugin-arg-defero-disable -S -emit-llvm %s -o - | FileCheck %s --check-prefix=OFF
// RUN: not %clangxx -std=c++17 -fplugin=%shlibdir/DeferoPlugin%shlibext -fplugin-arg-defero-bogus -fsyntax-only %s 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: %clangxx -std=c++17 -O2 -fpass-plugin=%shlibdir/DeferoPlugin%shlibext -S -emit-llvm %s -o - | FileCheck %s --check-prefix=FUSED
// ON: call void @__defero_hint_neighbor
// With optimisation the late part fuses the hint into the node's allocation:
// the callee chosen once at the function's entry, the neighbour loaded
// before the call, the kind a constant.
// FUSED: [[FN:%.*]] = select i1 %{{.*}}, ptr @__defero_new_hinted, ptr @defero.new.fallback
// FUSED: call {{.*}}ptr [[FN]](i64 24, i32 1, ptr %{{.*}}, ptr %{{.*}}, i32 0)
// OFF-NOT: __defero_hint
// BAD: error: defero: unknown plugin argument 'bogus' (accepted: disable)
#include <list>
int f(std::list<int> &l, int x) {
  l.push_back(x);
  return static_cast<int>(l.size());
}
