// fused_entry.cpp - the patched include path sends std::allocator's node
// hints through the fused entry (__defero_new_hinted: hint and operator new
// in one call, as the compiler plugin's late pass emits) whenever the
// runtime has it, and through the one-shot hint calls only when it does
// not. This program defines the hint ABI's entries itself (no runtime
// linked) and counts the calls: built with -DHAVE_FUSED it defines the
// fused entry too.
//
// Prints "fused=F neighbor=N tree=T container=C nodes=K" and exits 0 when
// the counts are what the patched headers must send; 1 with the counts
// otherwise.
#include <cstddef>
#include <cstdio>
#include <list>
#include <map>
#include <new>
#include <set>
#include <unordered_set>

namespace {
long fused[4], one_shot[4];
const void *last_container;
} // namespace

extern "C" {
void __defero_hint_neighbor(const void *c, const void *) { ++one_shot[1], last_container = c; }
void __defero_hint_tree(const void *c, const void *, int) { ++one_shot[2], last_container = c; }
void __defero_hint_container(const void *c) { ++one_shot[3], last_container = c; }
#ifdef HAVE_FUSED
void *__defero_new_hinted(std::size_t size, int kind, const void *c, const void *, int) {
  if (kind >= 1 && kind <= 3)
    ++fused[kind];
  last_container = c;
  return ::operator new(size);
}
#endif
}

int main() {
  std::list<int> l;
  for (int i = 0; i < 10; ++i)
    (i % 2 ? l.push_back(i) : l.push_front(i)); // 10 neighbour hints
  std::set<int> s;
  for (int i = 0; i < 7; ++i)
    s.insert(i * 3); // 7 tree hints
  std::map<int, int> m;
  m.emplace(1, 2); // 1 container hint (the node is made before its place)
  std::unordered_set<int> u;
  u.insert(5); // 1 container hint (the node), maybe more for buckets: no
  const bool fused_entry =
#ifdef HAVE_FUSED
      true;
#else
      false;
#endif
  std::printf("fused=%ld/%ld/%ld neighbor=%ld tree=%ld container=%ld\n", fused[1], fused[2],
              fused[3], one_shot[1], one_shot[2], one_shot[3]);
  const long want[4] = {0, 10, 7, 2};
  for (int k = 1; k <= 3; ++k) {
    const long via_fused = fused[k], via_one_shot = one_shot[k];
    if (fused_entry ? (via_fused != want[k] || via_one_shot != 0)
                    : (via_one_shot != want[k] || via_fused != 0)) {
      std::printf("FAILED: kind %d: %ld fused, %ld one-shot, %ld wanted %s\n", k, via_fused,
                  via_one_shot, want[k], fused_entry ? "fused" : "one-shot");
      return 1;
    }
  }
  return l.size() + s.size() + m.size() + u.size() == 19 && last_container ? 0 : 1;
}
