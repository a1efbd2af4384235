// [[defero::policy]] lowers to __defero_container_policy(container, pred, K)
// for a local (after its annotation, before its constructor), a field
// (before the constructor call that makes it) and a global (in a
// constructor of priority 101, before the program's own), and the runtime
// then serves that container's nodes under that policy.
// RUN: %clangxx -std=c++17 -O0 -fplugin=%shlibdir/DeferoPlugin%shlibext -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
// RUN: %clangxx -std=c++20 -O2 -fplugin=%shlibdir/DeferoPlugin%shlibext %s -o %t
// RUN: env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.json %t | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --check-prefix=STATS < %t.json
// Without the runtime the same program prints the same.
// RUN: %t | FileCheck %s --check-prefix=OUT
// Disabled plugin: the attribute is still checked, nothing is lowered.
// RUN: %clangxx -std=c++17 -O0 -fplugin=%shlibdir/DeferoPlugin%shlibext -fplugin-arg-defero-disable -S -emit-llvm %s -o - | FileCheck %s --check-prefix=OFF
//
// IR-DAG: @llvm.global_ctors = appending global {{.*}} { i32 101, ptr @defero.policy.init, ptr null }
// IR-DAG: @defero.policy.path = private unnamed_addr constant [5 x i8] c"path\00"
// IR-DAG: @defero.policy.best = private unnamed_addr constant [5 x i8] c"best\00"
// IR-DAG: @defero.policy.first = private unnamed_addr constant [6 x i8] c"first\00"
// IR-LABEL: define {{.*}} @main(
// IR: [[LIST:%[0-9]+]] = alloca %"class.std::__cxx11::list"
// IR: call void @llvm.var.annotation.p0.p0(ptr [[LIST]],
// IR: call void @__defero_container_policy(ptr [[LIST]], ptr @defero.policy.best, i32 12)
// IR: {{call|invoke}} void @_ZNSt7__cxx114listIiSaIiEEC2ESt16initializer_listIiERKS1_(ptr {{.*}}[[LIST]],
// IR-LABEL: define {{.*}} @_ZN6HolderC2Ev(
// IR: [[FIELD:%[0-9]+]] = call ptr @llvm.ptr.annotation.p0.p0(
// IR: call void @__defero_container_policy(ptr [[FIELD]], ptr @defero.policy.first, i32 0)
// IR-NEXT: br label
// IR: call void @_ZNSt3mapIiiSt4lessIiESaISt4pairIKiiEEEC2Ev(ptr {{.*}}[[FIELD]])
// IR-LABEL: define internal void @defero.policy.init()
// IR: call void @__defero_container_policy(ptr @global_map, ptr @defero.policy.path, i32 16)
// IR: call void @__defero_container_policy(ptr @global_set, ptr @defero.policy.best, i32 0)
// OFF-NOT: __defero_container_policy
//
// OUT: 1204 3000
// Five containers with a policy; their 103 + 1 + 300 + 400 + 400 nodes
// were served under it, the 500 of the one without were not.
// STATS: "hinted_allocs": 1704,
// STATS-SAME: "container_policies": 5, "policy_allocs": 1204,
#include <cstdio>
#include <list>
#include <map>
#include <set>
#include <unordered_map>

struct Holder {
  [[defero::policy("first")]] std::map<int, int> index;
};
[[defero::policy("path", 16)]] std::map<int, int> global_map;
std::set<int> global_set __attribute__((defero_policy("best")));

int main() {
  [[defero::policy("best", 12)]] std::list<int> recent{1, 2, 3};
  [[defero::policy("first")]] std::unordered_map<int, int> lookup;
  std::list<int> plain;
  Holder h;
  h.index[7] = 1;
  for (int i = 0; i < 100; ++i)
    recent.push_back(i);
  for (int i = 0; i < 300; ++i)
    global_map.insert({i, i});
  for (int i = 0; i < 400; ++i) {
    global_set.insert(i);
    lookup[i] = i;
  }
  for (int i = 0; i < 500; ++i)
    plain.push_front(i);
  std::printf("%zu %zu\n", recent.size() + h.index.size() + global_map.size() +
                               global_set.size() + lookup.size(),
              plain.size() * 6);
}
