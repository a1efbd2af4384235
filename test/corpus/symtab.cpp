// A symbol table with nested scopes, as a small interpreter keeps it: each
// name maps to a stack of bindings (std::map<string, std::list<Binding>>,
// innermost first); each scope remembers its names in a std::set; globals
// live in a std::map filled by range insert, try_emplace, insert_or_assign,
// emplace_hint and operator[]. Runs a generated instruction stream.
// Written in C++17 so it also builds with -std=c++17.
// EXPECT-HINTS: neighbor tree container
#include <cstdint>
#include <cstdio>
#include <list>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "corpus_rng.h"

namespace {

struct Binding {
  long value;
  int depth;
  Binding(long v, int d) : value(v), depth(d) {}
};

class SymbolTable {
 public:
  SymbolTable() { scopes_.emplace_back(); }
  void enter() { scopes_.emplace_back(); }
  bool leave() {
    if (scopes_.size() == 1) return false;
    for (const std::string &name : scopes_.back()) {
      auto it = table_.find(name);
      it->second.pop_front();
      if (it->second.empty()) table_.erase(it);
    }
    scopes_.pop_back();
    return true;
  }
  // Declares in the innermost scope; redeclaration there just assigns.
  void declare(const std::string &name, long v) {
    int depth = static_cast<int>(scopes_.size());
    auto [it, fresh] = table_.try_emplace(name);
    if (!fresh && it->second.front().depth == depth) {
      it->second.front().value = v;
      return;
    }
    it->second.emplace_front(v, depth);
    scopes_.back().insert(name);
  }
  const long *lookup(const std::string &name) const {
    auto it = table_.find(name);
    return it == table_.end() ? nullptr : &it->second.front().value;
  }
  bool assign(const std::string &name, long v) {
    auto it = table_.find(name);
    if (it == table_.end()) return false;
    it->second.front().value = v;
    return true;
  }
  std::size_t depth() const { return scopes_.size(); }
  std::size_t names() const { return table_.size(); }

 private:
  std::map<std::string, std::list<Binding>> table_;
  std::list<std::set<std::string>> scopes_;
};

std::string name_of(std::uint32_t i) {
  std::string s(1, static_cast<char>('a' + i % 26));
  if (i >= 26) s += std::to_string(i / 26);
  return s;
}

}  // namespace

int main() {
  Rng r{77};
  // Globals: builtins by range insert, then the various insertion forms.
  std::vector<std::pair<std::string, long>> builtins;
  for (std::uint32_t i = 0; i < 40; ++i) builtins.emplace_back("builtin_" + name_of(i * 7), i);
  std::map<std::string, long> globals(builtins.begin(), builtins.begin() + 10);
  globals.insert(builtins.begin() + 10, builtins.end());
  for (std::uint32_t i = 0; i < 300; ++i) {
    std::string n = "g" + name_of(r.below(120));
    switch (i % 4) {
      case 0: globals.try_emplace(n, i); break;
      case 1: globals.insert_or_assign(n, static_cast<long>(i) * 3); break;
      case 2: globals[n] += i; break;
      default: globals.emplace_hint(globals.lower_bound(n), n, -static_cast<long>(i)); break;
    }
  }
  long gsum = 0;
  for (const auto &kv : globals) gsum += kv.second * static_cast<long>(kv.first.size());
  std::printf("globals=%zu weighted_sum=%ld first=%s last=%s\n", globals.size(), gsum,
              globals.begin()->first.c_str(), globals.rbegin()->first.c_str());

  SymbolTable st;
  unsigned long found = 0, missing = 0, assigned = 0, unassigned = 0;
  std::size_t max_depth = 0, max_names = 0;
  std::uint64_t h = 0;
  for (int step = 0; step < 50000; ++step) {
    std::uint32_t op = r.below(100);
    std::string n = name_of(r.below(r.below(200) + 1));
    if (op < 8 && st.depth() < 40) {
      st.enter();
    } else if (op < 16) {
      st.leave();
    } else if (op < 50) {
      st.declare(n, step);
    } else if (op < 80) {
      if (const long *v = st.lookup(n)) {
        ++found;
        h = (h ^ static_cast<std::uint64_t>(*v)) * 0x100000001b3ULL;
      } else if (auto g = globals.find("g" + n); g != globals.end()) {
        ++found;
        h = (h ^ static_cast<std::uint64_t>(g->second)) * 0x100000001b3ULL;
      } else {
        ++missing;
      }
    } else {
      if (st.assign(n, -step)) ++assigned; else ++unassigned;
    }
    if (st.depth() > max_depth) max_depth = st.depth();
    if (st.names() > max_names) max_names = st.names();
  }
  while (st.leave()) {
  }
  std::printf("lookups: found=%lu missing=%lu assigns: ok=%lu unbound=%lu\n", found, missing,
              assigned, unassigned);
  std::printf("max_depth=%zu max_names=%zu names_at_end=%zu checksum=%016llx\n", max_depth,
              max_names, st.names(), static_cast<unsigned long long>(h));
  return 0;
}
