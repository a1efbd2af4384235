// The static library: an index of words (std::map) and a set of lengths.
#pragma once
#include <cstddef>
#include <map>
#include <set>
#include <string>

class Catalog {
public:
  void add(const std::string &word);
  std::size_t distinct() const { return counts_.size(); }
  long weight() const;

private:
  std::map<std::string, int> counts_;
  std::set<std::size_t> lengths_;
};
