// The shared library: an append-only journal (std::list).
#pragma once
#include <list>
#include <string>

class Journal {
public:
  void record(const std::string &entry);
  long digest() const;

private:
  std::list<std::string> entries_;
};
