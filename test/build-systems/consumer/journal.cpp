#include "journal.h"

// One list insertion (a neighbour hint) per entry.
void Journal::record(const std::string &entry) { entries_.push_back(entry); }

long Journal::digest() const {
  long d = 0;
  for (const std::string &e : entries_)
    d = d * 31 + static_cast<long>(e.size());
  return d;
}
