// 1000 journal entries, 1000 word lookups over 200 distinct words of
// lengths 4..15 (3..12 letters and the id's digits): the program prints a
// checksum, and its stats report 1000 neighbour hints, 200 container hints
// and 12 tree hints, one per distinct length (the first insertion into the
// empty tree included).
#include <cstdio>
#include <string>

#include "catalog.h"
#include "journal.h"

extern "C" long consumer_mix(long a, long b);

int main() {
  Catalog catalog;
  Journal journal;
  for (int i = 0; i < 1000; ++i) {
    const int id = (i * 7) % 200;
    const std::string word(3 + id % 10, static_cast<char>('a' + id % 26));
    catalog.add(word + std::to_string(id));
    journal.record(word);
  }
  std::printf("distinct %zu weight %ld digest %ld mix %ld\n", catalog.distinct(),
              catalog.weight(), journal.digest(),
              consumer_mix(catalog.weight(), journal.digest()));
  return 0;
}
