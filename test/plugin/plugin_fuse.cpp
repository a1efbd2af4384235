// The late part at work through clang: at -O1 and up every hint of this
// program is fused with its node's operator new (no one-shot hint call is
// left), the runtime sees the same hints as the unfused -O0 build, and the
// program prints the same with and without the runtime.
// RUN: %clangxx -std=c++17 -O2 -fplugin=%shlibdir/DeferoPlugin%shlibext -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR --implicit-check-not='call void @__defero_hint_' --implicit-check-not='invoke void @__defero_hint_'
// With debug information the fused IR is still valid (PHIs carry no debug
// records).
// RUN: %clangxx -std=c++17 -O2 -g -fplugin=%shlibdir/DeferoPlugin%shlibext -S -emit-llvm %s -o - | %opt -passes=verify -disable-output
// The same in a custom opt pipeline; the pass plugin's own pipeline-start
// callback must not hint the module a second time.
// RUN: %clangxx -std=c++17 -O2 -Xclang -disable-llvm-passes -S -emit-llvm %s -o %t.raw.ll
// RUN: %opt -load-pass-plugin=%shlibdir/DeferoPlugin%shlibext -passes='defero-hints,default<O2>,defero-fuse' %t.raw.ll -S -o - | FileCheck %s --check-prefix=IR --implicit-check-not='call void @__defero_hint_' --implicit-check-not='invoke void @__defero_hint_'
// RUN: %opt -load-pass-plugin=%shlibdir/DeferoPlugin%shlibext -passes='defero-hints,defero-hints' %t.raw.ll -S -o - | FileCheck %s --check-prefix=ONCE
// ONCE-COUNT-6: call void @__defero_hint_
// ONCE-NOT: call void @__defero_hint_
// RUN: %clangxx -std=c++17 -O2 -fplugin=%shlibdir/DeferoPlugin%shlibext -Rpass=defero -c -o /dev/null %s 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: %clangxx -std=c++17 -O0 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.O0
// RUN: %clangxx -std=c++17 -O3 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t.O3
// RUN: env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.O0.json %t.O0 | FileCheck %s --check-prefix=OUT
// RUN: env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.O3.json %t.O3 | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --check-prefix=STATS < %t.O0.json
// RUN: FileCheck %s --check-prefix=STATS < %t.O3.json
// RUN: %t.O3 | FileCheck %s --check-prefix=OUT
//
// Seven fused calls (one per insertion; the callee is chosen once per
// function, in its entry block), each with its kind as a constant.
// IR-COUNT-7: {{call|invoke}} {{.*}}ptr %{{[0-9a-z.]+}}(i64 {{[0-9]+}}, i32 {{[123]}}, ptr
// IR-NOT: {{call|invoke}} {{.*}}ptr %{{[0-9a-z.]+}}(i64 {{[0-9]+}}, i32
// REMARK-DAG: remark: neighbor hint fused with operator new [-Rpass=defero]
// REMARK-DAG: remark: tree hint fused with operator new [-Rpass=defero]
// REMARK-DAG: remark: container hint fused with operator new [-Rpass=defero]
// OUT: 500 500 500 500 500 500 500
// STATS: "hints": {"neighbor": 1000, "tree": 1500, "container": 1000}, "hinted_allocs": 3500,
#include <cstdio>
#include <forward_list>
#include <list>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

int main() {
  std::list<int> l;
  std::forward_list<int> f;
  std::map<int, int> m;
  std::multimap<int, int> mm;
  std::set<int> s;
  std::unordered_map<int, int> u;
  std::unordered_set<int> us;
  for (int i = 0; i < 500; ++i) {
    l.insert(l.begin(), i);                // neighbor
    f.insert_after(f.before_begin(), i);   // neighbor
    m.insert({i, i});                      // tree
    mm.insert({i % 7, i});                 // tree
    s.insert(i);                           // tree
    u.emplace(i, i);                       // container
    us.insert(i);                          // container
  }
  std::size_t fl = 0;
  for (int x : f)
    fl += x >= 0;
  std::printf("%zu %zu %zu %zu %zu %zu %zu\n", l.size(), fl, m.size(), mm.size(),
              s.size(), u.size(), us.size());
}
