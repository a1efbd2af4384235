// debruijn_net - a network simulation on a binary De Bruijn graph, written
// the way such simulators use the STL: each node's links are a std::list
// of neighbours (out-links v -> 2v, 2v+1 and the in-links back), routes
// are found by breadth-first search with a std::list as the queue, nodes
// fail (their links are erased from every neighbour's list) and are
// repaired (the links are inserted again), and delivered messages are
// tallied in a std::map keyed by hop count.
//
//   debruijn_net [--bits B] [--rounds R] [--messages M] [--seed S]
//   prints: debruijn_net nodes=N rounds=R time_ms=T checksum=C peak_rss_bytes=R
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <list>
#include <map>
#include <random>
#include <vector>

#include "app_args.h"

int main(int argc, char **argv) {
  const defero_bench::AppArgs args(argc, argv, "debruijn_net",
                                   {"--bits", "--rounds", "--messages", "--seed"});
  const int bits = static_cast<int>(args.get("--bits", 16, 4, 26));
  const long long rounds = args.get("--rounds", 10, 1, 1000000);
  const long long messages = args.get("--messages", 40, 1, 100000000);
  std::mt19937_64 rng(static_cast<unsigned long long>(args.get("--seed", 1, 0, 1LL << 62)));

  const int n = 1 << bits;
  const int mask = n - 1;
  std::vector<std::list<int>> links(static_cast<std::size_t>(n));
  std::vector<char> up(static_cast<std::size_t>(n), 1);
  auto neighbours = [&](int v, auto &&f) {
    f((2 * v) & mask);
    f((2 * v + 1) & mask);
    f(v >> 1);
    f((v >> 1) | (n >> 1));
  };
  auto connect = [&](int v) {
    neighbours(v, [&](int w) {
      if (w == v || !up[static_cast<std::size_t>(w)])
        return;
      links[static_cast<std::size_t>(v)].push_back(w);
      links[static_cast<std::size_t>(w)].push_back(v);
    });
  };
  auto disconnect = [&](int v) {
    for (int w : links[static_cast<std::size_t>(v)])
      links[static_cast<std::size_t>(w)].remove(v);
    links[static_cast<std::size_t>(v)].clear();
  };

  const auto t0 = std::chrono::steady_clock::now();
  // Build: links added node by node (each pair from both ends once).
  for (int v = 0; v < n; ++v)
    neighbours(v, [&](int w) {
      if (w > v) {
        links[static_cast<std::size_t>(v)].push_back(w);
        links[static_cast<std::size_t>(w)].push_back(v);
      }
    });

  std::map<int, long long> hops_tally;
  std::vector<int> dist(static_cast<std::size_t>(n));
  std::vector<int> failed;
  long long unreachable = 0;
  for (long long r = 0; r < rounds; ++r) {
    // Failures: about 1% of the nodes go down; the longest-failed come back.
    for (int i = 0; i < n / 100; ++i) {
      const int v = static_cast<int>(rng() & static_cast<unsigned>(mask));
      if (!up[static_cast<std::size_t>(v)])
        continue;
      disconnect(v);
      up[static_cast<std::size_t>(v)] = 0;
      failed.push_back(v);
    }
    const std::size_t repair = failed.size() / 2;
    for (std::size_t i = 0; i < repair; ++i) {
      const int v = failed[i];
      up[static_cast<std::size_t>(v)] = 1;
      connect(v);
    }
    failed.erase(failed.begin(), failed.begin() + static_cast<long>(repair));
    // Routing: breadth-first search from each message's source.
    for (long long m = 0; m < messages; ++m) {
      const int src = static_cast<int>(rng() & static_cast<unsigned>(mask));
      const int dst = static_cast<int>(rng() & static_cast<unsigned>(mask));
      if (!up[static_cast<std::size_t>(src)] || !up[static_cast<std::size_t>(dst)]) {
        ++unreachable;
        continue;
      }
      std::fill(dist.begin(), dist.end(), -1);
      std::list<int> queue{src};
      dist[static_cast<std::size_t>(src)] = 0;
      while (!queue.empty() && dist[static_cast<std::size_t>(dst)] < 0) {
        const int v = queue.front();
        queue.pop_front();
        for (int w : links[static_cast<std::size_t>(v)])
          if (dist[static_cast<std::size_t>(w)] < 0) {
            dist[static_cast<std::size_t>(w)] = dist[static_cast<std::size_t>(v)] + 1;
            queue.push_back(w);
          }
      }
      if (dist[static_cast<std::size_t>(dst)] < 0)
        ++unreachable;
      else
        ++hops_tally[dist[static_cast<std::size_t>(dst)]];
    }
  }
  std::uint64_t checksum = static_cast<std::uint64_t>(unreachable);
  for (const auto &[h, count] : hops_tally)
    checksum = checksum * 1000003u + static_cast<std::uint64_t>(h) * 7919u + static_cast<std::uint64_t>(count);
  for (int v = 0; v < n; v += 97)
    for (int w : links[static_cast<std::size_t>(v)])
      checksum = checksum * 31u + static_cast<std::uint64_t>(w);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("debruijn_net nodes=%d rounds=%lld time_ms=%.1f checksum=%llu peak_rss_bytes=%llu\n", n, rounds, ms,
              static_cast<unsigned long long>(checksum), defero_bench::peakRssBytes());
  return 0;
}
