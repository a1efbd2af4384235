// A program that replaces the global operator new/delete keeps them when
// hints are fused: every node still comes from its operator new and goes
// back to its operator delete (the runtime's __defero_new_hinted sends
// the one-shot hint and calls the program's operator new). Same output as
// the plain build, with and without the runtime.
// The replacement is in a file of its own (as in real programs), so the
// containers' operator new calls stay calls, and are fused.
// RUN: %clangxx -std=c++17 -O2 -DREPLACEMENT -c %s -o %t.repl.o
// RUN: %clangxx -std=c++17 -O2 -fplugin=%shlibdir/DeferoPlugin%shlibext -S -emit-llvm %s -o - | FileCheck %s --check-prefix=IR
// RUN: %clangxx -std=c++17 -O2 -fplugin=%shlibdir/DeferoPlugin%shlibext %s %t.repl.o -o %t
// RUN: %clangxx -std=c++17 -O2 %s %t.repl.o -o %t.plain
// RUN: env LD_PRELOAD=%libdefero DEFERO_STATS_FILE=%t.json %t | FileCheck %s --check-prefix=OUT
// RUN: %t | FileCheck %s --check-prefix=OUT
// RUN: env LD_PRELOAD=%libdefero %t.plain | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --check-prefix=STATS < %t.json
// IR: select i1 %{{.*}}, ptr @__defero_new_hinted, ptr @defero.new.fallback
// OUT: news 3000 deletes 3000 live 0
// OUT-NEXT: sum 1998000
// The hints still reach the runtime, and its malloc serves them.
// STATS: "hints": {"neighbor": 1000, "tree": 1000, "container": 1000}, "hinted_allocs": 3000,
#include <cstdio>
#include <cstdlib>
#include <list>
#include <map>
#include <new>
#include <unordered_set>

extern unsigned long news, deletes;
extern long live;

#ifdef REPLACEMENT
unsigned long news, deletes;
long live;

void *operator new(std::size_t n) {
  ++news;
  std::size_t *p = static_cast<std::size_t *>(std::malloc(n + 16));
  if (!p)
    throw std::bad_alloc();
  *p = n;
  live += static_cast<long>(n);
  return p + 2;
}
void operator delete(void *q) noexcept {
  if (!q)
    return;
  std::size_t *p = static_cast<std::size_t *>(q) - 2;
  ++deletes;
  live -= static_cast<long>(*p);
  std::free(p);
}
void operator delete(void *q, std::size_t) noexcept { operator delete(q); }
#else

int main() {
  long sum = 0;
  unsigned long n0 = 0, d0 = 0;
  {
    std::list<int> l;
    std::map<int, int> m;
    std::unordered_set<int> u;
    u.reserve(2048);    // the bucket array is allocated before the count
    n0 = news;
    d0 = deletes;
    for (int i = 0; i < 1000; ++i) {
      l.push_back(i);
      m.insert({i, i});
      u.insert(i);
    }
    for (int x : l)
      sum += x;
    for (auto &[k, v] : m)
      sum += k + v;
    for (int x : u)
      sum += x;
  }
  std::printf("news %lu deletes %lu live %ld\n", news - n0, deletes - d0 - 1, live);
  std::printf("sum %ld\n", sum);
}
#endif
