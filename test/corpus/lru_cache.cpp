// LRU cache: a std::list keeps the recency order (front = most recent), a
// std::unordered_map maps each key to its list node. Two caches with skewed
// key streams, a capacity change, and a memoised recurrence on top.
// EXPECT-HINTS: neighbor container
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <list>
#include <string>
#include <unordered_map>
#include <utility>

#include "corpus_rng.h"

namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) { return (h ^ v) * 0x100000001b3ULL; }

template <class K, class V>
class LruCache {
 public:
  explicit LruCache(std::size_t cap) : cap_(cap) {}

  V *get(const K &k) {
    auto it = index_.find(k);
    if (it == index_.end()) { ++misses_; return nullptr; }
    ++hits_;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }

  void put(const K &k, V v) {
    auto it = index_.find(k);
    if (it != index_.end()) {
      it->second->second = std::move(v);
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    while (order_.size() >= cap_) evict();
    order_.emplace_front(k, std::move(v));
    index_.emplace(k, order_.begin());
  }

  void set_capacity(std::size_t cap) {
    cap_ = cap;
    while (order_.size() > cap_) evict();
  }

  template <class F> void for_each(F f) const { for (const auto &kv : order_) f(kv.first, kv.second); }
  std::size_t size() const { return order_.size(); }
  unsigned long hits() const { return hits_; }
  unsigned long misses() const { return misses_; }
  unsigned long evictions() const { return evictions_; }

 private:
  void evict() {
    index_.erase(order_.back().first);
    order_.pop_back();
    ++evictions_;
  }
  std::size_t cap_;
  std::list<std::pair<K, V>> order_;
  std::unordered_map<K, typename std::list<std::pair<K, V>>::iterator> index_;
  unsigned long hits_ = 0, misses_ = 0, evictions_ = 0;
};

std::string render(std::uint32_t key) {
  std::string s = "page-";
  do { s += static_cast<char>('a' + key % 26); key /= 26; } while (key);
  return s;
}

// Memoised f(n) = f(n/2) + f(n/3) + n mod 1000003 with a small LRU in front.
std::uint64_t memo_f(LruCache<std::uint64_t, std::uint64_t> &c, std::uint64_t n) {
  if (n < 2) return n;
  if (std::uint64_t *v = c.get(n)) return *v;
  std::uint64_t r = (memo_f(c, n / 2) + memo_f(c, n / 3) + n) % 1000003;
  c.put(n, r);
  return r;
}

void report(const char *name, std::uint64_t sum, std::size_t size, unsigned long h,
            unsigned long m, unsigned long e) {
  std::printf("%s: size=%zu hits=%lu misses=%lu evictions=%lu checksum=%016llx\n", name, size,
              h, m, e, static_cast<unsigned long long>(sum));
}

}  // namespace

int main() {
  Rng rng{42};
  LruCache<std::uint32_t, std::string> pages(256);
  std::uint64_t served = 0;
  for (int i = 0; i < 60000; ++i) {
    // Skewed: small keys are hot.
    std::uint32_t key = rng.below(rng.below(1200) + 1);
    if (std::string *p = pages.get(key)) {
      served = mix(served, p->size());
    } else {
      pages.put(key, render(key));
    }
    if (i == 30000) pages.set_capacity(100);
    if (i == 45000) pages.set_capacity(400);
  }
  std::uint64_t h = served;
  pages.for_each([&](std::uint32_t k, const std::string &v) { h = mix(mix(h, k), v.size()); });
  report("pages", h, pages.size(), pages.hits(), pages.misses(), pages.evictions());

  LruCache<std::uint64_t, std::uint64_t> memo(64);
  std::uint64_t acc = 0;
  for (std::uint64_t n = 1; n < 4000; n += 7) acc = mix(acc, memo_f(memo, n * 7919));
  std::uint64_t h2 = acc;
  memo.for_each([&](std::uint64_t k, std::uint64_t v) { h2 = mix(mix(h2, k), v); });
  report("memo", h2, memo.size(), memo.hits(), memo.misses(), memo.evictions());
  std::printf("f(10^12)=%llu\n", static_cast<unsigned long long>(memo_f(memo, 1000000000000ULL)));
  return 0;
}
