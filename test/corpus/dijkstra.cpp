// Dijkstra's shortest paths on a generated sparse graph: adjacency lists in
// std::forward_list, std::set<pair<dist, vertex>> as the priority queue with
// decrease-key by erase+insert, paths rebuilt into a std::list.
// EXPECT-HINTS: neighbor tree
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <forward_list>
#include <iterator>
#include <limits>
#include <list>
#include <set>
#include <utility>
#include <vector>

#include "corpus_rng.h"

namespace {

struct Edge {
  int to;
  long weight;
};

using Graph = std::vector<std::forward_list<Edge>>;
constexpr long kInf = std::numeric_limits<long>::max();

Graph make_graph(std::uint64_t seed, int n, int extra_edges) {
  Rng r{seed};
  Graph g(static_cast<std::size_t>(n));
  // A ring keeps everything reachable; random chords make it interesting.
  for (int v = 0; v < n; ++v) {
    int w = (v + 1) % n;
    g[static_cast<std::size_t>(v)].push_front({w, 50 + r.below(50)});
  }
  for (int i = 0; i < extra_edges; ++i) {
    int a = static_cast<int>(r.below(static_cast<std::uint32_t>(n)));
    int b = static_cast<int>(r.below(static_cast<std::uint32_t>(n)));
    long w = 1 + r.below(100);
    g[static_cast<std::size_t>(a)].push_front({b, w});
    // Keep each adjacency list sorted by target after the first: insert_after.
    auto &adj = g[static_cast<std::size_t>(b)];
    auto prev = adj.before_begin();
    for (auto it = adj.begin(); it != adj.end() && it->to < a; ++it) prev = it;
    adj.insert_after(prev, Edge{a, w + 3});
  }
  return g;
}

struct Result {
  std::vector<long> dist;
  std::vector<int> parent;
  unsigned long decrease_keys = 0;
};

Result dijkstra(const Graph &g, int src) {
  std::size_t n = g.size();
  Result res{std::vector<long>(n, kInf), std::vector<int>(n, -1)};
  std::set<std::pair<long, int>> pq;
  res.dist[static_cast<std::size_t>(src)] = 0;
  pq.insert({0, src});
  while (!pq.empty()) {
    auto [d, u] = *pq.begin();
    pq.erase(pq.begin());
    for (const Edge &e : g[static_cast<std::size_t>(u)]) {
      long nd = d + e.weight;
      long &cur = res.dist[static_cast<std::size_t>(e.to)];
      if (nd < cur) {
        if (cur != kInf) {
          pq.erase({cur, e.to});
          ++res.decrease_keys;
        }
        cur = nd;
        res.parent[static_cast<std::size_t>(e.to)] = u;
        pq.insert({nd, e.to});
      }
    }
  }
  return res;
}

std::list<int> path_to(const Result &r, int target) {
  std::list<int> path;
  for (int v = target; v != -1; v = r.parent[static_cast<std::size_t>(v)]) path.push_front(v);
  return path;
}

}  // namespace

int main() {
  const int n = 3000;
  Graph g = make_graph(7, n, 9000);
  std::size_t edges = 0;
  for (const auto &adj : g) edges += static_cast<std::size_t>(std::distance(adj.begin(), adj.end()));
  std::printf("vertices=%d edges=%zu\n", n, edges);

  const int sources[] = {0, 17, 1234, 2999};
  std::uint64_t total_h = 0;
  for (int src : sources) {
    Result r = dijkstra(g, src);
    long maxd = 0, sum = 0;
    int far = src;
    for (int v = 0; v < n; ++v) {
      long d = r.dist[static_cast<std::size_t>(v)];
      sum += d;
      if (d > maxd) { maxd = d; far = v; }
      total_h = (total_h ^ static_cast<std::uint64_t>(d)) * 0x100000001b3ULL;
    }
    std::list<int> path = path_to(r, far);
    std::printf("src=%d sum=%ld farthest=%d dist=%ld hops=%zu decrease_keys=%lu path:", src, sum,
                far, maxd, path.size() - 1, r.decrease_keys);
    int shown = 0;
    for (int v : path) {
      if (shown++ == 8) { std::printf(" ..."); break; }
      std::printf(" %d", v);
    }
    std::printf("\n");
  }
  std::printf("checksum=%016llx\n", static_cast<unsigned long long>(total_h));
  return 0;
}
