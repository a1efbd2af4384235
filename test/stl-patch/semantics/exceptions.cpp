// exceptions.cpp - the strong exception guarantee of node insertion, and the
// hint bookkeeping around it, printed as a transcript that must be the same
// with and without `-isystem <build>/stl-patch/include`.
//
// An element type whose constructor throws on the Nth construction is
// inserted into every node container kind (push_back, insert, emplace,
// emplace_hint, operator[], try_emplace, insert_or_assign, range insert,
// resize, copy construction); after the exception the container must be
// unchanged where the standard promises it (and whatever it is, it is
// printed), no element and no node may leak, and no hint may be left
// pending:
//  - at the throw (read inside the throwing constructor) and right after
//    the catch, the runtime's hints (neighbor+tree+container) must equal
//    its hinted_allocs: every hint was taken by its node allocation;
//  - the next plain malloc after the catch is not a hinted allocation;
//  - for an allocator with defero_hint_tag (hints through allocate(n,
//    hint)), the next node allocation of an unrelated container gets no
//    hint.
// The runtime checks run when libdefero is preloaded; without it there is
// nothing that could be pending, and the transcript is the same.
//
// Last section: a container with defero::allocator gets non-null hints
// through allocate(n, hint) under the patched path (the `defero-hints`
// lines: 0 unpatched, > 0 patched).
#include <forward_list>
#include <functional>
#include <list>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common.h"
#include "hint_counting.h"

using namespace sem;

namespace {

// --- the throwing element ---------------------------------------------------------

struct Boom {
  int where;
};

int g_countdown = 0;     // > 0: the construction that brings it to 0 throws
long g_live_elems = 0;   // constructed and not destroyed
int g_pending_at_throw = 0;

/// Called where an exception is about to be thrown from inside a container
/// operation: is a hint pending at this moment? (No allocation here.)
void note_throw_point() { g_pending_at_throw += hint_pending() ? 1 : 0; }

void tick() {
  if (g_countdown > 0 && --g_countdown == 0) {
    note_throw_point();
    throw Boom{1};
  }
}

struct T {
  int v;
  T() : v(-1) {
    tick();
    ++g_live_elems;
  }
  T(int x) : v(x) {
    tick();
    ++g_live_elems;
  } // NOLINT: implicit on purpose
  T(const T &o) : v(o.v) {
    tick();
    ++g_live_elems;
  }
  T(T &&o) : v(o.v) {
    tick();
    ++g_live_elems;
  } // may throw, like a real one
  T &operator=(const T &) = default;
  T &operator=(T &&) = default;
  ~T() { --g_live_elems; }
  bool operator<(const T &o) const { return v < o.v; }
  bool operator==(const T &o) const { return v == o.v; }
};
int as_int(const T &t) { return t.v; }
void put(const T &t) { std::printf(" %d", t.v); }

struct HashT {
  std::size_t operator()(const T &t) const { return std::hash<int>()(t.v); }
};

// A comparator and a hash that throw when armed (before any node exists
// for insert(value), after the node is made for emplace).
int g_fn_countdown = 0;
void fn_tick() {
  if (g_fn_countdown > 0 && --g_fn_countdown == 0) {
    note_throw_point();
    throw Boom{2};
  }
}
struct ThrowingLess {
  bool operator()(int a, int b) const {
    fn_tick();
    return a < b;
  }
};
struct ThrowingHash {
  std::size_t operator()(int a) const {
    fn_tick();
    return std::hash<int>()(a);
  }
};

// --- one attempt ------------------------------------------------------------------------

void *(*volatile g_malloc)(std::size_t) = std::malloc; // not folded away at -O2
void (*volatile g_free)(void *) = std::free;

// The node-allocation probe for hinting allocators: an unordered container
// never passes a hint, so a non-null one would be a stale, pending one.
using Probe = std::unordered_set<int, std::hash<int>, std::equal_to<int>, HintCounting<int>>;
Probe *g_probe = nullptr;
int g_probe_key = 0;

void push_values(std::vector<int> &out, int v) { out.push_back(v); }
void push_values(std::vector<int> &out, const T &t) { out.push_back(t.v); }
template <class A, class B> void push_values(std::vector<int> &out, const std::pair<A, B> &p) {
  push_values(out, p.first);
  push_values(out, p.second);
}
template <class C> SEM_NOINLINE std::vector<int> values(const C &c) {
  std::vector<int> out;
  for (const auto &x : c)
    push_values(out, x);
  return out;
}

long live_blocks(const Stats &s) { return static_cast<long>(s.allocs - s.frees); }

enum Guarantee { kStrong, kBasic };

/// What happened around one operation (the part that is not per container
/// type, so that it is compiled once).
struct Outcome {
  const char *label;
  Guarantee g;
  bool rt = runtime_present();
  Stats s0;
  long elems0 = g_live_elems;
  bool threw = false, pending_after = false, malloc_hinted = false, probe_hinted = false;
  long leaked = 0;
};

SEM_NOINLINE void arm(Outcome &o, int nth, bool fn) {
  if (o.rt && !read_stats(o.s0))
    die("exceptions: defero_stats_json failed");
  g_pending_at_throw = 0;
  (fn ? g_fn_countdown : g_countdown) = nth;
}

/// Right after the catch, before anything there allocates.
SEM_NOINLINE void caught(Outcome &o) {
  o.threw = true;
  o.pending_after = hint_pending();
  if (o.rt) {
    Stats a, b;
    read_stats(a);
    void *p = g_malloc(40);
    g_free(p);
    read_stats(b);
    ++g_runtime_checks;
    o.malloc_hinted = b.hinted != a.hinted;
  }
  const long h0 = g_dhints;
  g_probe->insert(g_probe_key++);
  o.probe_hinted = g_dhints != h0;
}

/// After the operation, before anything else allocates: node memory. For
/// the strong cases nothing may stay allocated (the probe uses
/// defero::allocator's own heap, not malloc).
SEM_NOINLINE void settle(Outcome &o) {
  g_countdown = g_fn_countdown = 0;
  Stats s1;
  if (o.rt && !read_stats(s1))
    die("exceptions: defero_stats_json failed");
  o.leaked = o.rt && o.g == kStrong ? live_blocks(s1) - live_blocks(o.s0) : 0;
}

/// Prints the line (the container's contents come last).
SEM_NOINLINE void report(const Outcome &o, bool unchanged) {
  const long leaked = o.leaked;
  const bool elem_leak = o.g == kStrong && g_live_elems != o.elems0;
  const bool pending = g_pending_at_throw || o.pending_after || o.malloc_hinted || o.probe_hinted;
  if (!o.threw || (o.g == kStrong && !unchanged) || elem_leak || leaked || pending)
    ++g_failures;
  std::printf("  %s: %s", o.label, o.threw ? "threw" : "DID NOT THROW");
  if (o.g == kStrong)
    std::printf(", %s", unchanged ? "unchanged" : "STRONG GUARANTEE VIOLATED");
  if (elem_leak)
    std::printf(", ELEMENT LEAK %ld", g_live_elems - o.elems0);
  if (leaked)
    std::printf(", MEMORY LEAK %ld blocks", leaked);
  if (g_pending_at_throw)
    std::printf(", PENDING LEAK (at the throw)");
  else if (o.pending_after)
    std::printf(", PENDING LEAK (after the catch)");
  else if (o.malloc_hinted)
    std::printf(", PENDING LEAK (the next malloc was hinted)");
  else if (o.probe_hinted)
    std::printf(", PENDING LEAK (the next defero::allocator node got a hint)");
  else
    std::printf(", pending ok");
  std::printf(", ");
}

template <class X> struct identity {
  using type = X;
};

/// Arms the Nth construction (or comparator/hash call, fn=true), runs op on
/// c, and prints what happened in one line. op is a function pointer (a
/// captureless lambda) so that this is instantiated once per container.
template <class C>
SEM_NOINLINE void attempt(const char *label, C &c, int nth, Guarantee g,
                          typename identity<void (*)(C &)>::type op, bool fn = false) {
  const std::vector<int> before = values(c);
  Outcome o;
  o.label = label;
  o.g = g;
  arm(o, nth, fn);
  try {
    op(c);
  } catch (const Boom &) {
    caught(o);
  }
  settle(o);
  report(o, values(c) == before);
  put_contents(c);
  std::printf("\n");
}

// The arguments of the operations (made before the countdown is armed).
const T *g_t;
const std::vector<T> *g_src;
const std::pair<const int, T> *g_v;
const std::vector<std::pair<const int, T>> *g_vsrc;

// --- the containers ---------------------------------------------------------------------

// Every kind with std::allocator (these send the weak hint ABI); list and
// map also with the counting allocator (no hints, counted blocks) and with
// a hinting allocator (hints through allocate(n, hint)).
template <class X> using CA = CountingAlloc<X, true, false, true>;

template <template <class> class A> void list_cases(const char *name) {
  std::printf("== list<T> %s\n", name);
  std::list<T, A<T>> l{1, 2, 3};
  const T t(7);
  const std::vector<T> src{10, 11, 12, 13};
  g_t = &t;
  g_src = &src;
  attempt("push_back", l, 1, kStrong, [](auto &c) { c.push_back(*g_t); });
  attempt("push_front", l, 1, kStrong, [](auto &c) { c.push_front(*g_t); });
  attempt("emplace_back", l, 1, kStrong, [](auto &c) { c.emplace_back(8); });
  attempt("emplace(mid)", l, 1, kStrong, [](auto &c) { c.emplace(std::next(c.begin()), 8); });
  attempt("insert(mid, x)", l, 1, kStrong, [](auto &c) { c.insert(std::next(c.begin()), *g_t); });
  attempt("insert(mid, n, x)", l, 2, kStrong,
          [](auto &c) { c.insert(std::next(c.begin()), 3, *g_t); });
  attempt("insert(mid, range)", l, 3, kStrong,
          [](auto &c) { c.insert(std::next(c.begin()), g_src->begin(), g_src->end()); });
  attempt("resize(grow)", l, 3, kStrong, [](auto &c) { c.resize(8); });
  attempt("copy construction", l, 2, kStrong, [](auto &c) { std::list<T, A<T>> copy(c); });
  section_end();
}

void forward_list_cases() {
  std::printf("== forward_list<T>\n");
  std::forward_list<T> l{1, 2, 3};
  const T t(7);
  const std::vector<T> src{10, 11, 12, 13};
  g_t = &t;
  g_src = &src;
  attempt("push_front", l, 1, kStrong, [](auto &c) { c.push_front(*g_t); });
  attempt("emplace_front", l, 1, kStrong, [](auto &c) { c.emplace_front(8); });
  attempt("emplace_after", l, 1, kStrong, [](auto &c) { c.emplace_after(c.begin(), 8); });
  attempt("insert_after(x)", l, 1, kStrong, [](auto &c) { c.insert_after(c.begin(), *g_t); });
  attempt("insert_after(n, x)", l, 2, kStrong, [](auto &c) { c.insert_after(c.begin(), 3, *g_t); });
  attempt("insert_after(range)", l, 3, kStrong,
          [](auto &c) { c.insert_after(c.begin(), g_src->begin(), g_src->end()); });
  attempt("resize(grow)", l, 2, kBasic, [](auto &c) { c.resize(6); });
  attempt("copy construction", l, 2, kStrong, [](auto &c) { std::forward_list<T> copy(c); });
  section_end();
}

template <template <class> class A> void map_cases(const char *name) {
  std::printf("== map<int, T> %s\n", name);
  using V = std::pair<const int, T>;
  std::map<int, T, std::less<int>, A<V>> m;
  for (int i = 0; i < 5; ++i)
    m.emplace(i * 10, i);
  const V v(15, 15);
  const T t(7);
  const std::vector<V> src{{1, 1}, {2, 2}, {3, 3}};
  g_v = &v;
  g_t = &t;
  g_vsrc = &src;
  attempt("insert(value)", m, 1, kStrong, [](auto &c) { c.insert(*g_v); });
  attempt("insert(hint, value)", m, 1, kStrong, [](auto &c) { c.insert(c.begin(), *g_v); });
  attempt("emplace", m, 1, kStrong, [](auto &c) { c.emplace(25, 25); });
  attempt("emplace_hint", m, 1, kStrong, [](auto &c) { c.emplace_hint(c.end(), 45, 45); });
  attempt("operator[]", m, 1, kStrong, [](auto &c) { c[35]; });
  attempt("try_emplace", m, 1, kStrong, [](auto &c) { c.try_emplace(5, 5); });
  attempt("try_emplace(hint)", m, 1, kStrong, [](auto &c) { c.try_emplace(c.begin(), 6, 6); });
  attempt("insert_or_assign(new)", m, 1, kStrong, [](auto &c) { c.insert_or_assign(7, *g_t); });
  attempt("copy construction", m, 3, kStrong,
          [](auto &c) { std::map<int, T, std::less<int>, A<V>> copy(c); });
  attempt("insert(range), 3rd throws", m, 3, kBasic,
          [](auto &c) { c.insert(g_vsrc->begin(), g_vsrc->end()); });
  section_end();
}

void tree_cases() {
  std::printf("== multimap<int, T>\n");
  std::multimap<int, T> mm{{1, 1}, {2, 2}, {2, 3}};
  const std::pair<const int, T> v(2, 9);
  g_v = &v;
  attempt("insert(value)", mm, 1, kStrong, [](auto &c) { c.insert(*g_v); });
  attempt("insert(hint, value)", mm, 1, kStrong, [](auto &c) { c.insert(c.begin(), *g_v); });
  attempt("emplace", mm, 1, kStrong, [](auto &c) { c.emplace(2, 4); });
  attempt("emplace_hint", mm, 1, kStrong, [](auto &c) { c.emplace_hint(c.end(), 3, 3); });
  section_end();

  std::printf("== set<T>\n");
  std::set<T> s{1, 3, 5};
  const T t(4);
  const std::vector<T> src{6, 7, 8};
  g_t = &t;
  g_src = &src;
  attempt("insert(value)", s, 1, kStrong, [](auto &c) { c.insert(*g_t); });
  attempt("insert(hint, value)", s, 1, kStrong, [](auto &c) { c.insert(c.end(), *g_t); });
  attempt("emplace", s, 1, kStrong, [](auto &c) { c.emplace(2); });
  attempt("emplace_hint", s, 1, kStrong, [](auto &c) { c.emplace_hint(c.begin(), 0); });
  attempt("insert(range), 2nd throws", s, 2, kBasic,
          [](auto &c) { c.insert(g_src->begin(), g_src->end()); });
  section_end();

  std::printf("== multiset<T>\n");
  std::multiset<T> ms{1, 1, 2};
  attempt("insert(value)", ms, 1, kStrong, [](auto &c) { c.insert(*g_t); });
  attempt("emplace", ms, 1, kStrong, [](auto &c) { c.emplace(1); });
  attempt("emplace_hint", ms, 1, kStrong, [](auto &c) { c.emplace_hint(c.end(), 1); });
  section_end();

  std::printf("== set<int, throwing comparator>\n");
  std::set<int, ThrowingLess> ts{1, 2, 3};
  attempt("insert, 2nd comparison throws", ts, 2, kStrong, [](auto &c) { c.insert(4); }, true);
  attempt("emplace, 2nd comparison throws", ts, 2, kStrong, [](auto &c) { c.emplace(0); }, true);
  attempt("emplace_hint, 1st comparison throws", ts, 1, kStrong,
          [](auto &c) { c.emplace_hint(c.end(), 9); }, true);
  section_end();
}

template <template <class> class A> void unordered_map_cases(const char *name) {
  std::printf("== unordered_map<int, T> %s\n", name);
  using V = std::pair<const int, T>;
  std::unordered_map<int, T, std::hash<int>, std::equal_to<int>, A<V>> m;
  for (int i = 0; i < 5; ++i)
    m.emplace(i * 10, i);
  const V v(15, 15);
  const T t(7);
  const std::vector<V> src{{1, 1}, {2, 2}, {3, 3}};
  g_v = &v;
  g_t = &t;
  g_vsrc = &src;
  attempt("insert(value)", m, 1, kStrong, [](auto &c) { c.insert(*g_v); });
  attempt("emplace", m, 1, kStrong, [](auto &c) { c.emplace(25, 25); });
  attempt("emplace_hint", m, 1, kStrong, [](auto &c) { c.emplace_hint(c.begin(), 45, 45); });
  attempt("operator[]", m, 1, kStrong, [](auto &c) { c[35]; });
  attempt("try_emplace", m, 1, kStrong, [](auto &c) { c.try_emplace(5, 5); });
  attempt("insert_or_assign(new)", m, 1, kStrong, [](auto &c) { c.insert_or_assign(7, *g_t); });
  attempt("copy construction", m, 3, kStrong,
          [](auto &c) { std::unordered_map<int, T, std::hash<int>, std::equal_to<int>, A<V>> copy(c); });
  attempt("insert(range), 3rd throws", m, 3, kBasic,
          [](auto &c) { c.insert(g_vsrc->begin(), g_vsrc->end()); });
  section_end();
}

void unordered_cases() {
  std::printf("== unordered_set<T>\n");
  std::unordered_set<T, HashT> s{1, 2, 3};
  const T t(4);
  g_t = &t;
  attempt("insert(value)", s, 1, kStrong, [](auto &c) { c.insert(*g_t); });
  attempt("emplace", s, 1, kStrong, [](auto &c) { c.emplace(5); });
  section_end();

  std::printf("== unordered_multimap<int, T>\n");
  std::unordered_multimap<int, T> mm{{1, 1}, {1, 2}};
  const std::pair<const int, T> v(1, 3);
  g_v = &v;
  attempt("insert(value)", mm, 1, kStrong, [](auto &c) { c.insert(*g_v); });
  attempt("emplace", mm, 1, kStrong, [](auto &c) { c.emplace(2, 2); });
  section_end();

  std::printf("== unordered_multiset<T>\n");
  std::unordered_multiset<T, HashT> ms{1, 1, 2};
  attempt("insert(value)", ms, 1, kStrong, [](auto &c) { c.insert(*g_t); });
  attempt("emplace", ms, 1, kStrong, [](auto &c) { c.emplace(1); });
  section_end();

  std::printf("== unordered_set<int, throwing hash>\n");
  std::unordered_set<int, ThrowingHash> ts{1, 2, 3};
  attempt("insert, hash throws", ts, 1, kStrong, [](auto &c) { c.insert(4); }, true);
  attempt("emplace, hash throws", ts, 1, kStrong, [](auto &c) { c.emplace(5); }, true);
  section_end();
}

// --- defero::allocator: hints through allocate(n, hint) --------------------------------

template <class C> void defero_case(const char *name, C &c, long h0, long a0) {
  long sum = 0;
  for (const auto &x : c) {
    if constexpr (std::is_same_v<std::decay_t<decltype(x)>, int>)
      sum += x;
    else
      sum += x.first + x.second;
  }
  std::printf("  %s: size %td, sum %ld, allocations %ld\n", name,
              std::distance(c.begin(), c.end()), sum, g_dallocs - a0);
  print_defero_hints(name, g_dhints - h0);
}

void defero_allocator_hints() {
  section("defero::allocator hints");
  {
    long h0 = g_dhints, a0 = g_dallocs;
    std::list<int, HintCounting<int>> l;
    for (int i = 0; i < 50; ++i)
      l.push_back(i);
    for (int i = 0; i < 10; ++i)
      l.insert(std::next(l.begin(), 10), 100 + i);
    l.emplace_front(7);
    l.remove_if([](int x) { return x % 3 == 0; });
    l.sort();
    defero_case("list", l, h0, a0);

    h0 = g_dhints, a0 = g_dallocs;
    std::forward_list<int, HintCounting<int>> f;
    auto it = f.before_begin();
    for (int i = 0; i < 40; ++i)
      it = f.insert_after(it, i);
    f.resize(60);
    f.reverse();
    defero_case("forward_list", f, h0, a0);

    h0 = g_dhints, a0 = g_dallocs;
    using MA = HintCounting<std::pair<const int, int>>;
    std::map<int, int, std::less<int>, MA> m;
    for (int i = 0; i < 60; ++i)
      m.insert({(i * 37) % 101, i});
    for (int i = 0; i < 10; ++i)
      m.emplace(200 + i, i);
    m[500] = 1;
    m.erase(37);
    defero_case("map", m, h0, a0);

    // Unordered containers have no neighbour or parent: never a hint, in
    // either build (a plain line, compared everywhere).
    h0 = g_dhints, a0 = g_dallocs;
    Probe u;
    for (int i = 0; i < 40; ++i)
      u.insert(i);
    u.emplace(77);
    note("unordered_set: size %zu, allocations %ld, non-null hints %ld", u.size(),
         g_dallocs - a0, g_dhints - h0);
  }
  section_end();
}

} // namespace

int main() {
  stats_init();
  try { // the first throw of a process may set up the unwinder: not here
    g_countdown = 1;
    T warm(0);
  } catch (const Boom &) {
  }
  g_countdown = 0;
  {
    Probe probe;
    g_probe = &probe;
    list_cases<std::allocator>("std::allocator");
    list_cases<CA>("counting allocator");
    list_cases<HintCounting>("defero::allocator (hints through allocate)");
    forward_list_cases();
    map_cases<std::allocator>("std::allocator");
    map_cases<CA>("counting allocator");
    map_cases<HintCounting>("defero::allocator (hints through allocate)");
    tree_cases();
    unordered_map_cases<std::allocator>("std::allocator");
    unordered_cases();
    defero_allocator_hints();
    g_probe = nullptr;
  }
  std::printf("== elements and defero::allocator blocks\n  live elements %ld, live "
              "defero::allocator blocks %ld\n", g_live_elems, g_dlive);
  return finish("exceptions", g_live_elems + g_dlive);
}
