// Exceptions during insertion: an element type whose constructors throw on
// a schedule, and a hash that throws for some keys. Each container must keep
// its contents (strong guarantee for single-node inserts and for list range
// insert) and stay usable; the program checks that and prints checksums.
// EXPECT-HINTS: neighbor tree container
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <forward_list>
#include <functional>
#include <iterator>
#include <list>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "corpus_rng.h"

namespace {

int g_fuse = 0;  // constructions until the next one throws; 0 = never throws
long g_live = 0;

struct Fragile {
  int v;
  explicit Fragile(int x) : v(x) { tick(); ++g_live; }
  Fragile(const Fragile &o) : v(o.v) { tick(); ++g_live; }
  Fragile &operator=(const Fragile &) = default;
  ~Fragile() { --g_live; }
  static void tick() {
    if (g_fuse > 0 && --g_fuse == 0) throw std::runtime_error("fuse");
  }
  bool operator<(const Fragile &o) const { return v < o.v; }
};

struct PickyHash {  // refuses keys divisible by 97
  std::size_t operator()(int k) const {
    if (k % 97 == 0) throw std::invalid_argument("hash");
    return std::hash<int>{}(k);
  }
};

unsigned long g_throws = 0;
template <class F> void attempt(Rng &r, F f) {
  g_fuse = r.below(8) == 0 ? 1 + static_cast<int>(r.below(3)) : 0;
  try { f(); } catch (const std::exception &) { ++g_throws; }
  g_fuse = 0;
}

template <class C> std::uint64_t sum(const C &c) {
  std::uint64_t h = 0;
  for (const auto &x : c) h = (h ^ static_cast<std::uint64_t>(x.v)) * 0x100000001b3ULL;
  return h;
}

}  // namespace

int main() {
  Rng r{31337};
  std::list<Fragile> lst;
  std::forward_list<Fragile> fwd;
  std::set<Fragile> st;
  std::multiset<Fragile> ms;
  std::map<int, Fragile> mp;
  std::unordered_map<int, Fragile, PickyHash> um;
  bool ok = true;
  for (int i = 0; i < 20000; ++i) {
    int x = static_cast<int>(r.below(5000));
    Fragile proto(x);
    switch (i % 8) {
      case 0: {
        std::size_t before = lst.size();
        attempt(r, [&] { lst.emplace_back(x); });
        ok &= lst.size() == before || lst.size() == before + 1;
        break;
      }
      case 1: {  // range insert: all or nothing
        std::vector<Fragile> batch(3, proto);
        std::size_t before = lst.size();
        attempt(r, [&] { lst.insert(std::next(lst.begin(), static_cast<long>(lst.size() / 2)), batch.begin(), batch.end()); });
        ok &= lst.size() == before || lst.size() == before + 3;
        break;
      }
      case 2: attempt(r, [&] { fwd.emplace_front(x); }); break;
      case 3: attempt(r, [&] { fwd.insert_after(fwd.begin() == fwd.end() ? fwd.before_begin() : fwd.begin(), proto); }); break;
      case 4: attempt(r, [&] { st.insert(proto); ms.insert(proto); }); break;
      case 5: attempt(r, [&] { mp.try_emplace(x, x); }); break;
      case 6: attempt(r, [&] { mp.emplace(x + 5000, x); ms.emplace(x); }); break;
      default: attempt(r, [&] { um.emplace(x, proto); }); break;
    }
    if (i % 1000 == 999 && !lst.empty()) {  // prune, as a long-running program would
      lst.remove_if([](const Fragile &f) { return f.v % 3 == 0; });
      if (!st.empty()) st.erase(st.begin());
      if (!um.empty()) um.erase(um.begin());
    }
  }
  ok &= std::is_sorted(st.begin(), st.end()) && std::is_sorted(ms.begin(), ms.end());
  for (const auto &kv : mp) ok &= kv.first == kv.second.v || kv.first == kv.second.v + 5000;
  for (const auto &kv : um) ok &= kv.first == kv.second.v && kv.first % 97 != 0;
  long live = static_cast<long>(lst.size() + st.size() + ms.size() + mp.size() + um.size()) +
              std::distance(fwd.begin(), fwd.end());
  ok &= live == g_live;
  std::printf("throws=%lu live=%ld tracked=%ld ok=%s\n", g_throws, g_live, live, ok ? "yes" : "NO");
  std::printf("list=%zu %016llx\n", lst.size(), static_cast<unsigned long long>(sum(lst)));
  std::printf("forward_list=%td %016llx\n", std::distance(fwd.begin(), fwd.end()), static_cast<unsigned long long>(sum(fwd)));
  std::printf("set=%zu %016llx multiset=%zu %016llx\n", st.size(), static_cast<unsigned long long>(sum(st)),
              ms.size(), static_cast<unsigned long long>(sum(ms)));
  std::uint64_t hm = 0, hu = 0;
  for (const auto &kv : mp) hm = (hm ^ static_cast<std::uint64_t>(kv.first * 7 + kv.second.v)) * 0x100000001b3ULL;
  for (const auto &kv : um) hu += static_cast<std::uint64_t>(kv.first) * 31 + static_cast<std::uint64_t>(kv.second.v);
  std::printf("map=%zu %016llx unordered_map=%zu %016llx\n", mp.size(), static_cast<unsigned long long>(hm),
              um.size(), static_cast<unsigned long long>(hu));
  return ok ? 0 : 1;
}
