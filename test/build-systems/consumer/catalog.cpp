#include "catalog.h"

// One emplace-style insertion (operator[]: a container hint) per new word,
// and one positioned tree insertion (insert: a tree hint) per new length.
void Catalog::add(const std::string &word) {
  ++counts_[word];
  lengths_.insert(word.size());
}

long Catalog::weight() const {
  long w = 0;
  for (const auto &[word, n] : counts_)
    w += static_cast<long>(word.size()) * n;
  for (std::size_t len : lengths_)
    w += static_cast<long>(len);
  return w;
}
