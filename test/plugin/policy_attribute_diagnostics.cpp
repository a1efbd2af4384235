// [[defero::policy]] is checked where it is written: a wrong predicate, a
// K out of range, or a declaration that is not a node-based container with
// std::allocator each get an error at the attribute.
// RUN: %clangxx -std=c++17 -fplugin=%shlibdir/DeferoPlugin%shlibext -fsyntax-only -ferror-limit=0 -Xclang -verify %s
// Without the plugin the attribute is unknown, and ignored with a warning.
// RUN: %clangxx -std=c++17 -fsyntax-only %s 2>&1 | FileCheck %s --check-prefix=NOPLUGIN
// NOPLUGIN: warning: unknown attribute 'policy' ignored
#include <list>
#include <map>
#include <memory>
#include <set>
#include <unordered_set>
#include <vector>

template <class T> struct Arena : std::allocator<T> {
  template <class U> struct rebind { using other = Arena<U>; };
  Arena() = default;
  template <class U> Arena(const Arena<U> &) {}
};

// Accepted: every predicate, an optional K in 1..32, both spellings,
// locals, globals, statics, fields, and containers in templates.
[[defero::policy("first")]] std::map<int, int> g1;
[[defero::policy("best", 1)]] std::set<int> g2;
[[defero::policy("match", 32)]] std::multiset<int> g3;
std::unordered_set<int> g4 __attribute__((defero_policy("auto")));
std::list<int> g5 __attribute__((defero_policy("path", 16)));
struct Holder {
  [[defero::policy("path", 20)]] std::multimap<int, int> field;
};
template <class T> struct Generic {
  [[defero::policy("best")]] std::list<T> items;
};
Generic<long> instantiated;
void locals() {
  [[defero::policy("best")]] std::list<int> l;
  [[defero::policy("path", 24)]] static std::set<int> s;
  constexpr int k = 12;
  [[defero::policy("first", k)]] std::map<int, int> m;
}

// Wrong predicate names.
[[defero::policy("fastest")]] std::map<int, int> b1; // expected-error {{defero::policy: unknown predicate 'fastest' (accepted: first, best, match, path, auto)}}
[[defero::policy("First")]] std::set<int> b2; // expected-error {{unknown predicate 'First'}}
[[defero::policy(3)]] std::set<int> b3; // expected-error {{the first argument must be a string literal naming the predicate}}
[[defero::policy(L"best")]] std::set<int> b4; // expected-error {{the first argument must be a string literal naming the predicate}}

// K out of range, or not a constant.
[[defero::policy("path", 0)]] std::set<int> k1; // expected-error {{defero::policy: K=0 is out of range (accepted: 1..32; leave it out for the default)}}
[[defero::policy("path", 33)]] std::set<int> k2; // expected-error {{K=33 is out of range}}
[[defero::policy("best", -4)]] std::list<int> k3; // expected-error {{K=-4 is out of range}}
int runtime_k = 8;
[[defero::policy("best", runtime_k)]] std::list<int> k4; // expected-error {{the second argument (K) must be an integer constant}}

// Not a node-based container, or not a variable or field.
[[defero::policy("best")]] std::vector<int> v; // expected-error {{defero::policy applies to node-based containers (std::list, forward_list, map, set, multimap, multiset, unordered_*); 'v' has type 'std::vector<int>'}}
[[defero::policy("best")]] int i; // expected-error {{'i' has type 'int'}}
[[defero::policy("best")]] std::list<int> array[4]; // expected-error {{'array' has type 'std::list<int>[4]'}}
std::list<int> &ref __attribute__((defero_policy("best"))) = g5; // expected-error {{'ref' has type 'std::list<int> &'}}
[[defero::policy("best")]] void function(); // expected-error {{defero::policy applies to a variable or a field of a node-based container type}}
void parameter([[defero::policy("best")]] std::list<int> l); // expected-error {{defero::policy applies to a variable or a field}}
struct [[defero::policy("best")]] Type {}; // expected-error {{defero::policy applies to a variable or a field}}
struct UserList { int x; };
namespace mine { template <class T> struct list { T x; }; }
[[defero::policy("best")]] mine::list<int> lookalike; // expected-error {{'lookalike' has type 'mine::list<int>'}}

// A container with another allocator carries no hints.
[[defero::policy("best")]] std::list<int, Arena<int>> custom; // expected-error {{defero::policy needs a container with std::allocator (its nodes carry the hints); 'custom' uses 'Arena<int>'}}

// Argument count, and the spelling without the scope (someone else's
// attribute: a warning, as clang gives for any unknown one).
[[defero::policy]] std::set<int> n0; // expected-error {{defero::policy takes a predicate and an optional K, e.g. [[defero::policy("best")]] or [[defero::policy("path", 16)]]}}
[[defero::policy("best", 4, 5)]] std::set<int> n3; // expected-error {{defero::policy takes a predicate and an optional K}}
[[policy("best")]] std::set<int> unscoped; // expected-warning {{unknown attribute 'policy' ignored; Defero's is spelled [[defero::policy(...)]]}}
[[policy(lru, 1, 2)]] int other_policy; // expected-warning {{unknown attribute 'policy' ignored}}

// thread_local: one container per thread, no single address.
[[defero::policy("best")]] thread_local std::list<int> per_thread; // expected-error {{defero::policy does not apply to a thread_local variable ('per_thread': one container per thread)}}

// On a statement.
int statement(int x) {
  [[defero::policy("best")]] return x; // expected-error {{defero::policy applies to a variable or a field of a node-based container type, not to a statement}}
}

// Deduced types are checked once they are known (at the end of the file).
std::map<int, int> load();
std::vector<int> load_vector();
void deduced() {
  [[defero::policy("best")]] auto a = std::list<int>{1, 2};
  [[defero::policy("best")]] std::list b{1, 2, 3};
  [[defero::policy("first")]] auto m = load();
  [[defero::policy("first")]] auto v = load_vector(); // expected-error {{'v' has type 'std::vector<int>'}}
  [[defero::policy("first")]] auto n = 3; // expected-error {{'n' has type 'int'}}
}
