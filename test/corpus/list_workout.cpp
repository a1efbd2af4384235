// A std::list workout: every way to put nodes into a list (push/emplace at
// both ends, insert at a position, insert n copies, insert a range, resize,
// assign) and every way to move them (splice, merge, sort, unique, remove_if,
// reverse), with a checksum after each phase.
// EXPECT-HINTS: neighbor
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <list>
#include <string>
#include <vector>

#include "corpus_rng.h"

namespace {

void phase(const char *name, const std::list<int> &l) {
  std::uint64_t h = 1469598103934665603ULL;
  for (int x : l) h = (h ^ static_cast<std::uint32_t>(x)) * 1099511628211ULL;
  std::printf("%-16s size=%5zu checksum=%016llx front=%d\n", name, l.size(),
              static_cast<unsigned long long>(h), l.empty() ? -1 : l.front());
}
void phase_s(const char *name, const std::list<std::string> &l) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const auto &x : l) for (char c : x) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  std::printf("%-16s size=%5zu checksum=%016llx first=%s\n", name, l.size(),
              static_cast<unsigned long long>(h), l.empty() ? "-" : l.front().c_str());
}

}  // namespace

int main() {
  Rng r{1234};
  std::list<int> a;
  for (int i = 0; i < 3000; ++i) {
    if (i % 3 == 0) a.push_front(static_cast<int>(r.below(10000)));
    else if (i % 3 == 1) a.push_back(static_cast<int>(r.below(10000)));
    else a.emplace_back(static_cast<int>(r.below(10000)));
  }
  phase("push/emplace", a);
  auto mid = std::next(a.begin(), 1500);
  for (int i = 0; i < 500; ++i) mid = a.insert(mid, i);
  a.insert(a.end(), 50, 7);
  std::vector<int> v(400);
  for (int &x : v) x = static_cast<int>(r.below(500));
  a.insert(std::next(a.begin(), 10), v.begin(), v.end());
  a.emplace(std::next(a.begin(), 3), -1);
  phase("insert", a);

  std::list<int> b;
  for (int i = 0; i < 2000; ++i) b.push_back(static_cast<int>(r.below(20000)));
  a.sort();
  b.sort();
  a.merge(b);
  phase("sort+merge", a);
  a.unique();
  phase("unique", a);
  a.remove_if([](int x) { return x % 7 == 3; });
  a.remove(7);
  phase("remove_if", a);

  std::list<int> c;
  auto it = a.begin();
  for (int i = 0; i < 200 && it != a.end(); ++i) {
    auto nx = std::next(it, 1 + static_cast<long>(r.below(3)));
    if (nx == a.end()) break;
    c.splice(c.end(), a, it);  // move single nodes
    it = nx;
  }
  c.splice(c.begin(), a, std::next(a.begin(), 100), std::next(a.begin(), 300));  // a range
  c.reverse();
  phase("splice(a)", a);
  phase("splice(c)", c);

  a.resize(a.size() + 300);  // default-constructed zeros at the end
  a.resize(a.size() + 100, 42);
  phase("resize grow", a);
  a.resize(a.size() / 2);
  phase("resize shrink", a);
  c.assign(777, 5);
  phase("assign(n,v)", c);
  c.assign(v.rbegin(), v.rend());
  phase("assign(range)", c);
  a.splice(a.end(), c);
  a.sort([](int x, int y) { return x % 1000 < y % 1000; });  // stable sort by key
  phase("sort(cmp)", a);

  std::list<std::string> words;
  const char *const syll[] = {"ab", "cd", "ef", "gh", "ij", "kl"};
  for (int i = 0; i < 1500; ++i) {
    std::string w = syll[r.below(6)];
    w += syll[r.below(6)];
    if (r.below(2)) words.push_back(w); else words.emplace_front(w + syll[r.below(6)]);
  }
  words.sort();
  words.unique();
  words.insert(std::next(words.begin(), static_cast<long>(words.size() / 2)), 3, "MIDDLE");
  phase_s("strings", words);
  std::list<std::string> other(words.begin(), std::next(words.begin(), 20));
  words.remove_if([](const std::string &s) { return s.size() == 4; });
  words.merge(other);
  phase_s("strings merged", words);
  return 0;
}
