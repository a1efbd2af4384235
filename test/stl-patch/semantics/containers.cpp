// containers.cpp - the node container operations the stl-patch headers touch
// (and the ones around them), printed as a transcript. Built with and
// without `-isystem <build>/stl-patch/include`, the transcript must be the
// same: hints may change where nodes live, never what a container does.
//
// Sections: list, forward_list, map/multimap, set/multiset, the four
// unordered containers (std::allocator: these send the weak hint ABI);
// allocator propagation with a stateful counting allocator (which gets no
// hints). defero::allocator and exception safety: exceptions.cpp.
//
// Element types are ints on purpose: every distinct container type costs
// compile time, and the test builds this program a dozen times.
#include <forward_list>
#include <functional>
#include <list>
#include <map>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common.h"

using namespace sem;

namespace {

const std::vector<int> kRange{3, 1, 4, 1, 5, 9, 2, 6};

bool odd(int x) { return x % 2 != 0; }
bool by_tens(int a, int b) { return a / 10 < b / 10; } // sort is stable

// What list and forward_list share: merge, sort, unique, remove, reverse,
// copies and moves, swap, resize, assign, assignment, erase_if, clear.
template <class Seq> constexpr bool kIsList = !std::is_same_v<Seq, std::forward_list<int>>;

template <class Seq> void sequence_common(Seq &x, Seq &m) {
  x.merge(m);
  show("sort+merge", x);
  show("merged-from", m);
  Seq g{50, 7, 2};
  x.sort(std::greater<int>());
  x.merge(g, std::greater<int>());
  show("sort/merge greater", x);
  if constexpr (kIsList<Seq>) {
    x.push_back(2);
    x.push_front(50);
  } else {
    x.push_front(2);
  }
  x.sort();
  x.unique();
  show("unique", x);
  x.unique([](int p, int q) { return q - p == 1; });
  x.remove(40);
  x.remove_if([](int e) { return e % 5 == 0; });
  x.reverse();
  show("unique(pred)/remove/remove_if/reverse", x);
  Seq st{21, 13, 25, 11, 3, 29, 7, 14, 1};
  st.sort(by_tens);
  show("stable sort", st);

  Seq c(x), d;
  d = x;
  Seq e(std::move(c)), f{1};
  f = std::move(d);
  show("copy+move constructed", e);
  show("moved-from", c);
  show("move assigned", f);
  if constexpr (kIsList<Seq>)
    show("move-assigned-from", d);
  f.swap(x);
  std::swap(e, f);
  show("swap e", e);
  if constexpr (kIsList<Seq>)
    show("swap x", x);
  e.resize(9);
  show("resize grow", e);
  e.resize(3);
  e.resize(5, 77);
  show("resize shrink, resize(n, v)", e);
  e.assign(4, 6);
  show("assign(n, v)", e);
  e.assign(kRange.begin(), kRange.end());
  show("assign(range)", e);
  e.assign({2, 7, 1, 8});
  show("assign(ilist)", e);
  if constexpr (kIsList<Seq>)
    e = {1, 1, 2, 3, 5, 8, 13};
  Seq small{4};
  e = small; // copy assignment reuses nodes
  e = {1, 1, 2, 3, 5, 8, 13};
#if __cplusplus >= 202002L
  std::erase_if(e, odd);
#else
  e.remove_if(odd);
#endif
  show("operator=(ilist), erase_if odd", e);
  e.clear();
  show("clear", e);
}

// --- list ---------------------------------------------------------------------

void list_ops() {
  section("list");
  using L = std::list<int>;
  L a;
  a.push_back(3);
  a.push_front(1);
  a.emplace_back(5);
  a.emplace_front(0);
  auto it = std::next(a.begin(), 2); // 3
  a.insert(it, 2);
  note("emplace(pos) -> %d", *a.emplace(it, 30));
  a.insert(a.end(), 2, 9);
  a.insert(a.begin(), {7, 8});
  auto r = a.insert(it, kRange.begin(), kRange.end());
  note("range insert returned %d, old position still %d", *r, *it);
  show("push/emplace/insert", a);
  r = a.erase(it);
  note("erase returned %d", *r);
  a.erase(std::next(a.begin()), std::next(a.begin(), 3));
  a.pop_front();
  a.pop_back();
  show("erase/pop", a);

  L x{5, 1, 4}, y{9, 8}, z{30, 31, 32, 33};
  auto keep = y.begin(); // 9: spliced, must stay valid
  x.splice(x.begin(), y);
  note("after splice(all) kept iterator -> %d", *keep);
  x.splice(x.end(), z, std::next(z.begin()));
  x.splice(std::next(x.begin()), z, z.begin(), std::next(z.begin(), 2));
  show("splice x", x);
  show("splice y", y);
  show("splice z", z);
  x.sort();
  L m{0, 4, 6, 40};
  sequence_common(x, m);
  L n1(4), n2(3, 2), n3(kRange.begin(), kRange.begin() + 3);
  show("list(n)", n1);
  show("list(n, v)", n2);
  show("list(first, last)", n3);
  section_end();
}

// --- forward_list --------------------------------------------------------------

void forward_list_ops() {
  section("forward_list");
  using F = std::forward_list<int>;
  F a;
  a.push_front(3);
  a.emplace_front(1);
  auto it = a.insert_after(a.begin(), 2);
  it = a.emplace_after(it, 4);
  a.insert_after(a.before_begin(), 0);
  it = a.insert_after(it, 2, 9);
  note("insert_after(n) -> %d", *it);
  it = a.insert_after(a.begin(), kRange.begin(), kRange.end());
  note("insert_after(range) -> %d", *it);
  a.insert_after(it, {30, 31});
  show("push/emplace/insert_after", a);
  a.erase_after(a.begin());
  a.erase_after(it, std::next(it, 3));
  a.pop_front();
  show("erase_after/pop_front", a);

  F x{5, 1, 4}, y{9, 8}, z{30, 31, 32, 33};
  auto keep = y.begin();
  x.splice_after(x.before_begin(), y);
  note("after splice_after(all) kept iterator -> %d", *keep);
  x.splice_after(x.begin(), z, z.begin()); // moves 31
  x.splice_after(x.before_begin(), z, z.before_begin(), std::next(z.begin(), 2));
  show("splice_after x", x);
  show("splice_after y", y);
  show("splice_after z", z);
  x.sort();
  F m{0, 4, 6, 40};
  sequence_common(x, m);
  F n1(4), n2(3, 2), n3(kRange.begin(), kRange.begin() + 3);
  show("forward_list(n)", n1);
  show("forward_list(n, v)", n2);
  show("forward_list(first, last)", n3);
  section_end();
}

// --- map / multimap -------------------------------------------------------------

using M = std::map<int, int>;
using MM = std::multimap<int, int>;

void ret(const char *what, const std::pair<M::iterator, bool> &r) {
  note("%s -> (%d,%d) %s", what, r.first->first, r.first->second,
       r.second ? "inserted" : "present");
}

void map_ops() {
  section("map");
  M m;
  ret("insert", m.insert({5, 5}));
  ret("insert dup", m.insert(M::value_type(5, 50)));
  auto h = m.insert(m.end(), {9, 9});
  note("insert(hint) -> %d", h->first);
  ret("emplace", m.emplace(1, 1));
  ret("emplace dup", m.emplace(1, 10));
  h = m.emplace_hint(m.begin(), 0, 0);
  h = m.emplace_hint(h, 0, 100);
  note("emplace_hint dup -> (%d,%d)", h->first, h->second);
  m.emplace_hint(m.end(), 7, 7);
  ret("try_emplace", m.try_emplace(3, 3));
  ret("try_emplace dup", m.try_emplace(3, 30));
  m.try_emplace(m.end(), 8, 8);
  h = m.try_emplace(m.begin(), 8, 80);
  note("try_emplace(hint) dup -> (%d,%d)", h->first, h->second);
  ret("insert_or_assign", m.insert_or_assign(4, 4));
  ret("insert_or_assign existing", m.insert_or_assign(4, 40));
  m.insert_or_assign(m.end(), 6, 6);
  m[2] = 2;
  m[2] += 20;
  note("operator[] new default %d", m[11]);
  note("at %d, count %zu", m.at(9), m.count(9));
  std::vector<std::pair<int, int>> src{{12, 12}, {1, 111}, {13, 13}};
  m.insert(src.begin(), src.end());
  m.insert({{14, 14}, {15, 15}});
  show("inserts", m);
  note("erase(key) %zu", m.erase(11));
  note("erase(absent) %zu", m.erase(99));
  note("erase(it) -> %d", m.erase(m.find(12))->first);
  m.erase(m.find(13), m.find(15));
  show("erase", m);
  note("lower_bound(3) %d upper_bound(3) %d", m.lower_bound(3)->first, m.upper_bound(3)->first);

  // node handles
  M other{{40, 40}, {5, 55}};
  auto nh = m.extract(0);
  note("extract -> key %d mapped %d", nh.key(), nh.mapped());
  nh.key() = 41;
  nh.mapped() = 41;
  auto ir = other.insert(std::move(nh));
  note("insert(node) inserted %d node-empty %d -> %d", ir.inserted, ir.node.empty(),
       ir.position->first);
  ir = other.insert(m.extract(m.find(5)));
  note("insert(dup node) inserted %d node-empty %d -> %d returned key %d", ir.inserted,
       ir.node.empty(), ir.position->first, ir.node.key());
  m.insert(m.begin(), std::move(ir.node));
  note("extract(absent) empty %d", m.extract(99).empty());
  show("after node handles m", m);
  show("after node handles other", other);
  m.merge(other);
  show("merge m", m);
  show("merge other (duplicates stay)", other);
  MM mm{{5, 1}, {50, 2}, {50, 3}};
  m.merge(mm);
  show("merge(multimap) m", m);
  show("merge(multimap) source", mm);

  M c(m), d;
  d = m;
  M e(std::move(c)), f{{1, 1}};
  f = std::move(d);
  show("copy+move constructed", e);
  show("moved-from", c);
  show("move assigned", f);
  f.swap(other);
  std::swap(e, f);
  show("swap e", e);
  show("swap f", f);
  e = {{3, 3}, {1, 1}, {2, 2}, {4, 4}, {5, 5}, {6, 6}, {7, 7}, {8, 8}, {9, 9}, {10, 10}};
  show("operator=(ilist), reusing nodes", e);
  e = f;
  show("copy assign, reusing nodes", e);
#if __cplusplus >= 202002L
  std::erase_if(e, [](const M::value_type &p) { return p.second % 2 != 0; });
#else
  for (auto i = e.begin(); i != e.end();)
    i = i->second % 2 != 0 ? e.erase(i) : std::next(i);
#endif
  show("erase_if odd", e);
  e.clear();
  show("clear", e);
  section_end();

  section("multimap");
  for (int i = 0; i < 6; ++i) {
    mm.insert({i % 3, i});
    mm.emplace(i % 2, 10 + i);
  }
  auto mh = mm.insert(mm.find(1), {1, 90}); // as close as possible before the hint
  mh = mm.emplace_hint(mh, 1, 91);
  mm.emplace_hint(mm.begin(), 2, 92);
  mm.insert(mm.end(), MM::value_type(0, 93));
  mm.insert(src.begin(), src.end());
  mm.insert({{5, 50}, {5, 51}});
  show("inserts", mm);
  auto er = mm.equal_range(1);
  note("equal_range(1) size %td", std::distance(er.first, er.second));
  note("count(0) %zu", mm.count(0));
  note("erase(2) %zu", mm.erase(2));
  mm.erase(mm.find(5));
  auto mnh = mm.extract(1); // the first with key 1
  mnh.key() = 7;
  mm.insert(std::move(mnh));
  mnh = mm.extract(mm.find(0)); // before begin(): it may be that node
  mm.insert(mm.begin(), std::move(mnh));
  M um{{0, 60}, {8, 80}};
  mm.merge(um);
  show("erase/node handles/merge(map)", mm);
  show("merge source", um);
  MM mc(mm), md;
  md = mm;
  MM me(std::move(mc));
  me.swap(md);
  show("copy/move/swap", me);
  section_end();
}

// --- set / multiset -----------------------------------------------------------------

void set_ops() {
  section("set");
  using Set = std::set<int>;
  Set s;
  for (int i : {5, 3, 8, 1, 9, 2, 7})
    s.insert(i);
  auto r = s.insert(3);
  note("insert dup inserted %d -> %d", r.second, *r.first);
  auto h = s.insert(s.end(), 10);
  s.emplace_hint(h, 11);
  note("emplace inserted %d", s.emplace(0).second);
  s.insert(kRange.begin(), kRange.end());
  s.insert({30, 31});
  show("inserts", s);
  note("erase(key) %zu", s.erase(8));
  note("erase(it) -> %d", *s.erase(s.find(9)));
  s.erase(s.find(5), s.find(30));
  show("erase", s);
  Set other{1, 40};
  auto nh = s.extract(0);
  nh.value() = 41;
  note("insert(node) inserted %d", other.insert(std::move(nh)).inserted);
  auto ir = other.insert(s.extract(s.find(1)));
  note("insert(dup node) inserted %d node %d", ir.inserted, ir.node.value());
  s.insert(std::move(ir.node));
  s.merge(other);
  show("merge s", s);
  show("merge other", other);
  std::multiset<int> ms{1, 50, 50};
  s.merge(ms);
  show("merge(multiset) s", s);
  show("merge(multiset) source", ms);
  Set c(s), d;
  d = s;
  Set e(std::move(c));
  e.swap(other);
  show("copy/move/swap e", e);
  show("copy/move/swap other", other);
  e = {4, 3, 2, 1, 0, 5, 6, 7, 8, 9};
  show("operator=(ilist)", e);
  e = d;
  show("copy assign", e);
  e.clear();
  show("clear", e);
  section_end();

  section("multiset");
  for (int i = 0; i < 15; ++i)
    ms.insert((i * 5) % 7);
  auto mh = ms.insert(ms.find(3), 3);
  ms.emplace_hint(mh, 3);
  ms.emplace(4);
  ms.insert(kRange.begin(), kRange.end());
  ms.insert({8, 8});
  show("inserts", ms);
  note("count(3) %zu", ms.count(3));
  note("erase(2) %zu", ms.erase(2));
  ms.erase(ms.find(9));
  auto mnh = ms.extract(3);
  mnh.value() = 30;
  ms.insert(std::move(mnh));
  Set o2{0, 1, 100};
  ms.merge(o2);
  show("erase/node handles/merge(set)", ms);
  show("merge source", o2);
  std::multiset<int> mc(ms), md;
  md = ms;
  std::multiset<int> me(std::move(mc));
  std::swap(me, md);
  show("copy/move/swap", me);
  me = {3, 3, 1};
  show("operator=(ilist)", me);
  section_end();
}

// --- unordered containers --------------------------------------------------------------

void unordered_ops() {
  section("unordered_map");
  using U = std::unordered_map<int, int>;
  using UM = std::unordered_multimap<int, int>;
  U m;
  for (int i = 0; i < 10; ++i)
    m.insert({i, i});
  auto r = m.insert({3, 30});
  note("insert dup inserted %d -> (%d,%d)", r.second, r.first->first, r.first->second);
  r = m.emplace(10, 10);
  note("emplace_hint -> %d", m.emplace_hint(r.first, 11, 11)->first);
  m.try_emplace(12, 12);
  r = m.try_emplace(12, 120);
  note("try_emplace dup inserted %d -> (%d,%d)", r.second, r.first->first, r.first->second);
  m.try_emplace(m.begin(), 13, 13);
  note("insert_or_assign existing inserted %d", m.insert_or_assign(1, 100).second);
  m.insert_or_assign(m.end(), 14, 14);
  m[15] = 15;
  m[15] += 1;
  note("operator[] new default %d", m[16]);
  std::vector<std::pair<int, int>> src{{20, 20}, {2, 222}, {21, 21}};
  m.insert(src.begin(), src.end());
  m.insert({{22, 22}, {23, 23}});
  show_u("inserts", m);
  note("erase(key) %zu", m.erase(16));
  note("erase(absent) %zu", m.erase(99));
  m.erase(m.find(0));
  show_u("erase", m);
  U other{{40, 40}, {5, 55}};
  auto nh = m.extract(7);
  nh.key() = 41;
  note("insert(node) inserted %d", other.insert(std::move(nh)).inserted);
  auto ir = other.insert(m.extract(m.find(5)));
  note("insert(dup node) inserted %d node key %d", ir.inserted, ir.node.key());
  m.insert(std::move(ir.node));
  m.merge(other);
  show_u("merge m", m);
  show_u("merge other", other);
  UM mm{{1, 1}, {50, 50}, {50, 51}};
  m.merge(mm);
  show_u("merge(multimap) source", mm);
  m.rehash(64);
  show_u("rehash(64)", m);
  m.max_load_factor(4.0f);
  m.rehash(0);
  show_u("max_load_factor 4, rehash(0)", m);
  m.reserve(100);
  note("reserve(100): buckets %zu", m.bucket_count());
  U c(m), d;
  d = m;
  U e(std::move(c));
  e.swap(other);
  show_u("copy/move/swap e", e);
  show_u("copy/move/swap other", other);
  e = {{1, 1}, {2, 2}, {3, 3}};
  show_u("operator=(ilist)", e);
  e = d;
  show_u("copy assign", e);
  e.clear();
  show_u("clear", e);
  section_end();

  section("unordered_multimap");
  for (int i = 0; i < 12; ++i)
    mm.insert({i % 4, i});
  mm.emplace(1, 50);
  mm.emplace_hint(mm.find(2), 2, 51);
  show_u("inserts", mm);
  auto er = mm.equal_range(1);
  note("equal_range(1) size %td", std::distance(er.first, er.second));
  note("erase(3) %zu", mm.erase(3));
  auto mnh = mm.extract(0);
  mnh.key() = 9;
  mm.insert(std::move(mnh));
  UM mc(mm);
  mc.merge(mm);
  show_u("erase/node/copy+merge", mc);
  show_u("merged-from", mm);
  section_end();

  section("unordered_set");
  std::unordered_set<int> s;
  for (int i = 0; i < 30; ++i)
    s.insert((i * 7) % 23);
  s.emplace(100);
  s.emplace_hint(s.begin(), 101);
  s.insert(kRange.begin(), kRange.end());
  s.insert({300, 301});
  show_u("inserts", s);
  note("erase %zu", s.erase(5));
  auto snh = s.extract(6);
  snh.value() = 600;
  s.insert(std::move(snh));
  std::unordered_multiset<int> ms{1, 1, 2, 700};
  s.merge(ms);
  show_u("node handles/merge(multiset)", s);
  show_u("merge source", ms);
  std::unordered_set<int> sc(s), sd;
  sd = s;
  sd.rehash(3);
  show_u("copy + rehash(3)", sd);
  section_end();

  section("unordered_multiset");
  for (int i = 0; i < 10; ++i)
    ms.insert(i % 3);
  ms.emplace(7);
  ms.insert(ms.extract(1));
  std::unordered_multiset<int> t(ms);
  t.merge(ms);
  t.insert(kRange.begin(), kRange.end());
  show_u("inserts/node/copy+merge", t);
  show_u("merged-from", ms);
  section_end();
}

// --- allocator propagation with a stateful counting allocator -------------------------

template <class T, class A> void add(std::list<T, A> &c, int v) { c.push_back(v); }
template <class T, class A> void add(std::forward_list<T, A> &c, int v) { c.push_front(v); }
template <class K, class V, class C, class A> void add(std::map<K, V, C, A> &c, int v) {
  c.emplace(v, v * 2);
}
template <class K, class C, class A> void add(std::multiset<K, C, A> &c, int v) {
  c.insert(v);
  c.insert(v);
}
template <class K, class V, class H, class E, class A>
void add(std::unordered_map<K, V, H, E, A> &c, int v) {
  c.try_emplace(v, v * 3);
}
template <class K, class H, class E, class A> void add(std::unordered_set<K, H, E, A> &c, int v) {
  c.insert(v);
}

template <class C> void fill(C &c, int base) {
  for (int i = 0; i < 4; ++i)
    add(c, base + i);
}

template <class C> void show_a(const char *label, const C &c) {
  std::printf("  %s: alloc %d, ", label, c.get_allocator().id);
  put_contents(c);
  std::printf("\n");
}

void live_per_id(const char *what, const long *per_id) {
  std::printf("  %s per allocator id:", what);
  for (int id = 0; id < kIds; ++id)
    if (per_id[id])
      std::printf(" %d:%ld", id, per_id[id]);
  std::printf("\n");
}

template <class C> void propagation_case(const char *kind) {
  using A = typename C::allocator_type;
  std::printf("-- %s\n", kind);
  {
    C a(A(1)), b(A(2));
    fill(a, 0);
    fill(b, 100);
    C c(a); // select_on_container_copy_construction: id 11
    show_a("copy constructed", c);
    c = b;
    show_a("copy assigned (unequal)", c);
    C d(A(3)), e(A(4));
    fill(d, 200);
    fill(e, 300);
    d = std::move(e); // without POCMA: element-wise
    show_a("move assigned (unequal)", d);
    show_a("move-assigned-from", e);
    C f(std::move(a));
    show_a("move constructed", f);
    C g(std::move(b), A(5)); // unequal: element-wise
    show_a("allocator-extended move", g);
    C h(c, A(6));
    show_a("allocator-extended copy", h);
    C i(A(7)), j(A(7));
    fill(i, 400);
    std::swap(i, j); // equal allocators: always allowed
    show_a("swap (equal) i", i);
    show_a("swap (equal) j", j);
    if (std::allocator_traits<A>::propagate_on_container_swap::value) {
      std::swap(d, h); // unequal allocators: only with POCS
      show_a("swap (unequal, POCS) d", d);
      show_a("swap (unequal, POCS) h", h);
    }
    live_per_id("live blocks", g_live);
  }
  std::printf("  after scope: live blocks %ld, mismatched frees %ld\n", counting_live_blocks(),
              g_bad_frees);
}

template <bool CP, bool MP, bool SP> using CA = CountingAlloc<int, CP, MP, SP>;
template <bool CP, bool MP, bool SP>
using CAP = CountingAlloc<std::pair<const int, int>, CP, MP, SP>;

void propagation() {
  std::printf("== propagation A (copy 1, move 0, swap 1)\n");
  propagation_case<std::list<int, CA<true, false, true>>>("list");
  propagation_case<std::forward_list<int, CA<true, false, true>>>("forward_list");
  propagation_case<std::map<int, int, std::less<int>, CAP<true, false, true>>>("map");
  propagation_case<std::unordered_map<int, int, std::hash<int>, std::equal_to<int>,
                                      CAP<true, false, true>>>("unordered_map");
  std::printf("== propagation B (copy 0, move 1, swap 0)\n");
  propagation_case<std::list<int, CA<false, true, false>>>("list");
  propagation_case<std::multiset<int, std::less<int>, CA<false, true, false>>>("multiset");
  propagation_case<std::unordered_set<int, std::hash<int>, std::equal_to<int>,
                                      CA<false, true, false>>>("unordered_set");
  live_per_id("allocations", g_allocs);
}

} // namespace

int main() {
  stats_init();
  list_ops();
  forward_list_ops();
  map_ops();
  set_ops();
  unordered_ops();
  propagation();
  return finish("containers");
}
