// std::forward_list two ways: sparse polynomials (terms sorted by descending
// exponent; add, multiply, derivative, evaluation mod a prime) and the free
// list of a simulated fixed-block pool (push_front/pop_front, sorted returns
// with insert_after, coalescing with erase_after).
// EXPECT-HINTS: neighbor
#include <cstdint>
#include <cstdio>
#include <forward_list>
#include <iterator>
#include <vector>

#include "corpus_rng.h"

namespace {

constexpr std::int64_t kMod = 1000000007;

struct Term {
  std::int64_t coef;
  int exp;
};
using Poly = std::forward_list<Term>;

// Adds c*x^e into p, keeping exponents strictly descending and no zero terms.
void add_term(Poly &p, std::int64_t c, int e) {
  auto prev = p.before_begin();
  auto it = p.begin();
  while (it != p.end() && it->exp > e) prev = it++;
  if (it != p.end() && it->exp == e) {
    it->coef = (it->coef + c) % kMod;
    if (it->coef == 0) p.erase_after(prev);
  } else if (c % kMod != 0) {
    p.emplace_after(prev, Term{c % kMod, e});
  }
}

Poly add(const Poly &a, const Poly &b) {
  Poly r;
  auto tail = r.before_begin();
  auto i = a.begin(), j = b.begin();
  while (i != a.end() || j != b.end()) {
    if (j == b.end() || (i != a.end() && i->exp > j->exp)) {
      tail = r.insert_after(tail, *i++);
    } else if (i == a.end() || j->exp > i->exp) {
      tail = r.insert_after(tail, *j++);
    } else {
      std::int64_t c = (i->coef + j->coef) % kMod;
      if (c) tail = r.insert_after(tail, Term{c, i->exp});
      ++i, ++j;
    }
  }
  return r;
}

Poly multiply(const Poly &a, const Poly &b) {
  Poly r;
  for (const Term &x : a)
    for (const Term &y : b) add_term(r, x.coef * y.coef % kMod, x.exp + y.exp);
  return r;
}

Poly derivative(Poly p) {
  p.remove_if([](const Term &t) { return t.exp == 0; });
  for (Term &t : p) t.coef = t.coef * t.exp % kMod, --t.exp;
  return p;
}

std::int64_t eval(const Poly &p, std::int64_t x) {  // Horner over the sparse terms
  std::int64_t acc = 0;
  int cur = p.empty() ? 0 : p.front().exp;
  for (const Term &t : p) {
    for (; cur > t.exp; --cur) acc = acc * x % kMod;
    acc = (acc + t.coef) % kMod;
  }
  for (; cur > 0; --cur) acc = acc * x % kMod;
  return acc;
}

Poly random_poly(Rng &r, int terms, int max_exp) {
  Poly p;
  for (int i = 0; i < terms; ++i) {
    // Two statements: the order of the draws must not depend on the compiler.
    const std::uint32_t coef = 1 + r.below(1000);
    add_term(p, coef, static_cast<int>(r.below(static_cast<std::uint32_t>(max_exp))));
  }
  return p;
}

}  // namespace

int main() {
  Rng r{5};
  Poly a = random_poly(r, 60, 200), b = random_poly(r, 40, 150);
  Poly s = add(a, b), m = multiply(a, b), d = derivative(m);
  Poly prod_of_sum = multiply(s, s);
  std::printf("terms: a=%td b=%td a+b=%td a*b=%td (a*b)'=%td (a+b)^2=%td\n",
              std::distance(a.begin(), a.end()), std::distance(b.begin(), b.end()),
              std::distance(s.begin(), s.end()), std::distance(m.begin(), m.end()),
              std::distance(d.begin(), d.end()), std::distance(prod_of_sum.begin(), prod_of_sum.end()));
  for (std::int64_t x : {2, 3, 12345}) {
    std::int64_t ea = eval(a, x), eb = eval(b, x);
    bool ok = eval(m, x) == ea * eb % kMod && eval(s, x) == (ea + eb) % kMod &&
              eval(prod_of_sum, x) == (ea + eb) % kMod * ((ea + eb) % kMod) % kMod;
    std::printf("x=%lld a*b=%lld d=%lld consistent=%s\n", static_cast<long long>(x),
                static_cast<long long>(eval(m, x)), static_cast<long long>(eval(d, x)), ok ? "yes" : "NO");
    if (!ok) return 1;
  }

  // A pool of 4096 blocks; the free list is kept sorted on returns.
  std::forward_list<int> free_list;
  for (int blk = 4095; blk >= 0; --blk) free_list.push_front(blk);
  std::vector<int> held;
  std::uint64_t h = 0;
  for (int step = 0; step < 40000; ++step) {
    if (!free_list.empty() && (held.empty() || r.below(100) < 51)) {
      held.push_back(free_list.front());
      free_list.pop_front();
    } else {
      std::size_t k = r.below(static_cast<std::uint32_t>(held.size()));
      int blk = held[k];
      held[k] = held.back();
      held.pop_back();
      auto prev = free_list.before_begin();
      for (auto it = free_list.begin(); it != free_list.end() && *it < blk; ++it) prev = it;
      free_list.insert_after(prev, blk);
    }
    if (step % 1000 == 999) h = (h ^ static_cast<std::uint64_t>(free_list.empty() ? -1 : free_list.front())) * 0x100000001b3ULL;
  }
  free_list.sort();
  free_list.unique();
  std::printf("pool: held=%zu free=%td first_free=%d checksum=%016llx\n", held.size(),
              std::distance(free_list.begin(), free_list.end()),
              free_list.empty() ? -1 : free_list.front(), static_cast<unsigned long long>(h));
  return 0;
}
