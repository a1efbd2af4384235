// container_churn - one container kept at a constant size while a tenth of
// its entries are replaced each round (an erase at a random place, an
// insert of a new key): the measure of whether an allocator, and the
// hints' placement, keep a long-running program's heap bounded (issue 13).
// Built plain and with defero-c++ (container_churn_plugin); run the latter
// with DEFERO_STATS=1 to read its peak footprint.
//
//   container_churn [--container C] [--entries N] [--rounds R] [--seed S]
//   --container: 0 std::set<int>, 1 std::map<int, long>,
//                2 std::unordered_map<int, int>, 3 std::list<int> (entries
//                spread over entries / 10 lists, popped at the front of a
//                non-empty one and pushed at the back of another)
//   prints: container_churn container=C entries=N rounds=R checksum=X
//           peak_rss_bytes=B
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <list>
#include <map>
#include <random>
#include <set>
#include <unordered_map>
#include <vector>

#include "app_args.h"

int main(int argc, char **argv) {
  const defero_bench::AppArgs args(argc, argv, "container_churn",
                                   {"--container", "--entries", "--rounds", "--seed"});
  const int kind = static_cast<int>(args.get("--container", 0, 0, 3));
  const long long entries = args.get("--entries", 200000, 10, 100000000);
  const long long rounds = args.get("--rounds", 10, 0, 1000000);
  std::mt19937 rng(static_cast<unsigned>(args.get("--seed", 1, 0, 1000000)));

  std::set<int> set;
  std::map<int, long> map;
  std::unordered_map<int, int> hash;
  std::vector<std::list<int>> lists(static_cast<std::size_t>(entries / 10));
  auto key = [&] { return static_cast<int>(rng() >> 1); };
  auto anyList = [&]() -> std::list<int> & { return lists[rng() % lists.size()]; };
  // (Keys may repeat: the containers hold about `entries`, the same every
  // round, which is all the measure needs.)
  for (long long i = 0; i < entries; ++i) {
    if (kind == 0)
      set.insert(key());
    else if (kind == 1)
      map[key()] = i;
    else if (kind == 2)
      hash[key()] = static_cast<int>(i);
    else
      anyList().push_back(static_cast<int>(i));
  }
  for (long long r = 0; r < rounds; ++r)
    for (long long i = 0; i < entries / 10; ++i) {
      if (kind == 0) {
        auto it = set.lower_bound(key());
        set.erase(it == set.end() ? set.begin() : it);
        set.insert(key());
      } else if (kind == 1) {
        auto it = map.lower_bound(key());
        map.erase(it == map.end() ? map.begin() : it);
        map[key()] = i;
      } else if (kind == 2) {
        auto it = hash.find(key());
        hash.erase(it == hash.end() ? hash.begin() : it);
        hash[key()] = static_cast<int>(i);
      } else {
        // Pop from a list that has an entry (there is always one: the lists
        // hold `entries` between them), so the total stays constant.
        std::list<int> *from = &anyList();
        while (from->empty())
          from = &anyList();
        from->pop_front();
        anyList().push_back(static_cast<int>(i));
      }
    }
  std::uint64_t checksum = set.size() + map.size() + hash.size();
  for (int k : set)
    checksum = checksum * 31 + static_cast<std::uint64_t>(k);
  for (const auto &[k, v] : map)
    checksum = checksum * 31 + static_cast<std::uint64_t>(k) + static_cast<std::uint64_t>(v);
  for (const auto &l : lists)
    checksum = checksum * 31 + l.size();
  std::printf("container_churn container=%d entries=%lld rounds=%lld checksum=%" PRIu64
              " peak_rss_bytes=%llu\n",
              kind, entries, rounds, checksum, defero_bench::peakRssBytes());
  return 0;
}
