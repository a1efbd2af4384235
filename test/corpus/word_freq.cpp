// Word frequencies over generated text: counts in a std::map (operator[])
// and a std::unordered_map, cross-checked; a std::multimap ranks words by
// count; a std::set collects distinct bigrams; a std::unordered_multimap
// groups words by their first letter.
// EXPECT-HINTS: tree container
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "corpus_rng.h"

namespace {

const char *const kSyllables[] = {"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "zen", "qua",
                                  "bri", "dor", "el", "fan", "gu", "hop"};
constexpr std::uint32_t kNumSyllables = sizeof(kSyllables) / sizeof(kSyllables[0]);

// Zipf-like: low indices much more likely.
std::uint32_t skewed(Rng &r, std::uint32_t n) { return r.below(r.below(n) + 1); }

std::string make_word(Rng &r) {
  std::string w;
  std::uint32_t parts = 1 + skewed(r, 3);
  for (std::uint32_t i = 0; i < parts; ++i) w += kSyllables[skewed(r, kNumSyllables)];
  return w;
}

std::vector<std::string> generate_text(std::uint64_t seed, std::size_t n) {
  Rng r{seed};
  // A vocabulary, then a text drawn from it with skew plus occasional new words.
  std::vector<std::string> vocab;
  for (int i = 0; i < 700; ++i) vocab.push_back(make_word(r));
  std::vector<std::string> text;
  text.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    text.push_back(r.below(20) == 0 ? make_word(r) : vocab[skewed(r, 700)]);
  return text;
}

}  // namespace

int main() {
  std::vector<std::string> text = generate_text(2024, 80000);

  std::map<std::string, int> ordered;
  std::unordered_map<std::string, int> hashed;
  for (const std::string &w : text) {
    ++ordered[w];
    ++hashed[w];
  }
  bool agree = ordered.size() == hashed.size();
  for (const auto &kv : ordered) {
    auto it = hashed.find(kv.first);
    if (it == hashed.end() || it->second != kv.second) agree = false;
  }
  std::printf("words=%zu distinct=%zu maps_agree=%s\n", text.size(), ordered.size(),
              agree ? "yes" : "NO");

  // Rank by count, ties in alphabetical order (multimap keeps insertion order
  // of equal keys and we insert alphabetically).
  std::multimap<int, std::string, std::greater<int>> by_count;
  for (const auto &kv : ordered) by_count.insert(std::make_pair(kv.second, kv.first));
  int rank = 0;
  for (auto it = by_count.begin(); it != by_count.end() && rank < 12; ++it, ++rank)
    std::printf("  #%-2d %-12s %d\n", rank + 1, it->second.c_str(), it->first);
  auto singles = by_count.equal_range(1);
  std::printf("hapax_legomena=%zu\n",
              static_cast<std::size_t>(std::distance(singles.first, singles.second)));

  std::set<std::pair<std::string, std::string>> bigrams;
  for (std::size_t i = 1; i < text.size(); ++i) bigrams.insert({text[i - 1], text[i]});
  std::uint64_t h = 1469598103934665603ULL;
  for (const auto &b : bigrams)
    for (char c : b.first + "|" + b.second) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  std::printf("bigrams=%zu checksum=%016llx\n", bigrams.size(), static_cast<unsigned long long>(h));

  std::unordered_multimap<char, std::string> by_letter;
  for (const auto &kv : ordered) by_letter.emplace(kv.first[0], kv.first);
  std::map<char, std::size_t> letter_counts;  // ordered report
  for (const auto &kv : by_letter) letter_counts[kv.first] = by_letter.count(kv.first);
  for (const auto &lc : letter_counts) std::printf("%c:%zu ", lc.first, lc.second);
  std::printf("\n");

  // Remove rare words from the ordered map and recount.
  std::size_t erased = 0;
  for (auto it = ordered.begin(); it != ordered.end();) {
    if (it->second < 3) { it = ordered.erase(it); ++erased; } else { ++it; }
  }
  long total = 0;
  for (const auto &kv : ordered) total += kv.second;
  std::printf("erased=%zu kept=%zu kept_occurrences=%ld\n", erased, ordered.size(), total);
  return agree ? 0 : 1;
}
