// -Rpass=defero names every insert site of the program with the hint it
// got; -Rpass-missed=defero names those left alone, and why. Remarks point
// at the program's own calls, not into libstdc++.
// RUN: %clangxx -std=c++17 -O2 -fplugin=%shlibdir/DeferoPlugin%shlibext -Rpass=defero -Rpass-missed=defero -S -o /dev/null %s 2>&1 | FileCheck %s
// RUN: %clangxx -std=c++17 -O0 -fplugin=%shlibdir/DeferoPlugin%shlibext -Rpass=defero -S -o /dev/null %s 2>&1 | FileCheck %s --check-prefix=PASSED
// CHECK-DAG: plugin_remarks.cpp:[[@LINE+20]]:5: remark: std::list insertion: neighbor hint [-Rpass=defero]
// CHECK-DAG: plugin_remarks.cpp:[[@LINE+20]]:5: remark: std::map/set insertion: tree hint [-Rpass=defero]
// CHECK-DAG: plugin_remarks.cpp:[[@LINE+20]]:3: remark: std::map/set insertion: container hint [-Rpass=defero]
// CHECK-DAG: plugin_remarks.cpp:[[@LINE+20]]:5: remark: std::unordered container insertion: container hint [-Rpass=defero]
// CHECK-DAG: plugin_remarks.cpp:[[@LINE+20]]:5: remark: std::list insertion not hinted: it has its own allocator (not std::allocator) [-Rpass-missed=defero]
// PASSED-COUNT-4: remark: {{.*}} hint [-Rpass=defero]
// PASSED-NOT: not hinted
#include <list>
#include <map>
#include <unordered_set>
template <class T> struct MyAlloc {
  using value_type = T;
  MyAlloc() = default;
  template <class U> MyAlloc(const MyAlloc<U> &) {}
  T *allocate(std::size_t n) { return static_cast<T *>(::operator new(n * sizeof(T))); }
  void deallocate(T *p, std::size_t) { ::operator delete(p); }
};
template <class T, class U> bool operator==(const MyAlloc<T> &, const MyAlloc<U> &) { return true; }
void f(std::list<int> &l, std::map<int, int> &m, std::unordered_set<int> &u,
       std::list<int, MyAlloc<int>> &c) {
  l.push_back(1);
  m.insert({1, 2});
  m[3] = 4;
  u.insert(5);
  c.push_back(6);
}
