// Interval scheduling: greedy room assignment with a std::multiset of room
// end times, a booking calendar (std::map start -> end, emplace_hint) with
// cancellations, and per-room schedules in a std::map of std::multiset.
// EXPECT-HINTS: tree container
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "corpus_rng.h"

namespace {

struct Interval {
  long start, end;
  int id;
  bool operator<(const Interval &o) const {
    return start != o.start ? start < o.start : (end != o.end ? end < o.end : id < o.id);
  }
};

// Minimum rooms: intervals sorted by start; a multiset of (end, room) frees rooms.
std::map<int, std::multiset<Interval>> assign_rooms(const std::multiset<Interval> &jobs) {
  std::multiset<std::pair<long, int>> busy;  // (end, room)
  std::set<int> free_rooms;
  std::map<int, std::multiset<Interval>> rooms;
  int next_room = 0;
  for (const Interval &iv : jobs) {
    while (!busy.empty() && busy.begin()->first <= iv.start) {
      free_rooms.insert(busy.begin()->second);
      busy.erase(busy.begin());
    }
    int room;
    if (free_rooms.empty()) {
      room = next_room++;
    } else {
      room = *free_rooms.begin();
      free_rooms.erase(free_rooms.begin());
    }
    busy.emplace(iv.end, room);
    rooms[room].insert(iv);
  }
  return rooms;
}

// Calendar: accepts a booking only if it does not overlap; returns success.
bool book(std::map<long, long> &cal, long s, long e) {
  auto next = cal.lower_bound(s);
  if (next != cal.end() && next->first < e) return false;
  if (next != cal.begin() && std::prev(next)->second > s) return false;
  cal.emplace_hint(next, s, e);
  return true;
}

}  // namespace

int main() {
  Rng r{99};
  std::multiset<Interval> jobs;
  for (int i = 0; i < 6000; ++i) {
    long s = r.below(100000);
    jobs.insert({s, s + 1 + r.below(r.below(400) + 1), i});
  }
  auto rooms = assign_rooms(jobs);
  std::uint64_t h = 0;
  std::size_t max_load = 0;
  for (const auto &[room, sched] : rooms) {
    long prev_end = -1;
    for (const Interval &iv : sched) {
      if (iv.start < prev_end) {
        std::printf("overlap in room %d\n", room);
        return 1;
      }
      prev_end = iv.end;
      h = (h ^ static_cast<std::uint64_t>(iv.id * 131 + room)) * 0x100000001b3ULL;
    }
    if (sched.size() > max_load) max_load = sched.size();
  }
  std::printf("jobs=%zu rooms=%zu max_load=%zu checksum=%016llx\n", jobs.size(), rooms.size(),
              max_load, static_cast<unsigned long long>(h));

  // Calendar with cancellations.
  std::map<long, long> cal;
  int accepted = 0, rejected = 0, cancelled = 0;
  for (int i = 0; i < 20000; ++i) {
    long s = r.below(200000);
    long e = s + 5 + r.below(60);
    if (book(cal, s, e)) ++accepted; else ++rejected;
    if (i % 5 == 4 && !cal.empty()) {
      auto it = cal.lower_bound(static_cast<long>(r.below(200000)));
      if (it == cal.end()) it = cal.begin();
      cal.erase(it);
      ++cancelled;
    }
  }
  long booked = 0;
  for (const auto &kv : cal) booked += kv.second - kv.first;
  std::printf("calendar: accepted=%d rejected=%d cancelled=%d entries=%zu booked_time=%ld\n",
              accepted, rejected, cancelled, cal.size(), booked);

  // Free gaps of length >= 100, via multimap length -> start.
  std::multimap<long, long> gaps;
  long cursor = 0;
  for (const auto &kv : cal) {
    if (kv.first - cursor >= 100) gaps.emplace(kv.first - cursor, cursor);
    cursor = kv.second;
  }
  std::printf("gaps>=100: %zu", gaps.size());
  int shown = 0;
  for (auto it = gaps.rbegin(); it != gaps.rend() && shown < 5; ++it, ++shown)
    std::printf(" [%ld+%ld]", it->second, it->first);
  std::printf("\n");
  return 0;
}
