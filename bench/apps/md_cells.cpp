// md_cells - a molecular-dynamics application written the way such codes
// use the STL: particles live in a std::list per cell of a 2-D grid, a
// std::map holds the neighbour pairs within the cutoff (rebuilt every few
// steps), and each time step moves particles between cells (erase from
// one list, insert into another: a new node each time).
//
// Fixed-point integer arithmetic, so every compiler and allocator computes
// the same trajectory; the checksum proves it.
//
//   md_cells [--particles N] [--steps S] [--seed S]
//   prints: md_cells particles=N steps=S time_ms=T checksum=C peak_rss_bytes=R
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "app_args.h"

namespace {

struct Particle {
  std::int64_t x, y;   // position, 1/65536 of a cell side
  std::int64_t vx, vy; // velocity, same units per step
  int id;
};

constexpr std::int64_t kUnit = 1 << 16; // one cell side
constexpr std::int64_t kCut2 = (kUnit / 2) * (kUnit / 2);

} // namespace

int main(int argc, char **argv) {
  const defero_bench::AppArgs args(argc, argv, "md_cells", {"--particles", "--steps", "--seed"});
  const long long n = args.get("--particles", 200000, 16, 100000000);
  const long long steps = args.get("--steps", 20, 1, 100000);
  std::mt19937_64 rng(static_cast<unsigned long long>(args.get("--seed", 1, 0, 1LL << 62)));

  // About 8 particles per cell.
  int side = 4;
  while (static_cast<long long>(side) * side * 8 < n)
    ++side;
  const std::int64_t world = side * kUnit;
  std::vector<std::list<Particle>> cells(static_cast<std::size_t>(side) * side);
  auto cellOf = [&](std::int64_t x, std::int64_t y) {
    return static_cast<std::size_t>((y / kUnit) * side + x / kUnit);
  };

  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    Particle p{static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(world)),
               static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(world)),
               static_cast<std::int64_t>(rng() % 4001) - 2000,
               static_cast<std::int64_t>(rng() % 4001) - 2000, i};
    cells[cellOf(p.x, p.y)].push_back(p);
  }

  std::map<std::pair<int, int>, std::int64_t> pairs; // (id, id) -> distance^2
  std::uint64_t energy = 0;
  std::vector<std::pair<std::size_t, std::list<Particle>::iterator>> leaving;
  for (long long step = 0; step < steps; ++step) {
    // Neighbour pairs within the cutoff, from each cell and the 4 cells
    // after it (each pair once), every 4 steps.
    if (step % 4 == 0) {
      pairs.clear();
      for (int cy = 0; cy < side; ++cy)
        for (int cx = 0; cx < side; ++cx) {
          const auto &here = cells[static_cast<std::size_t>(cy * side + cx)];
          static const int dx[] = {0, 1, -1, 0, 1}, dy[] = {0, 0, 1, 1, 1};
          for (int k = 0; k < 5; ++k) {
            const int nx = (cx + dx[k] + side) % side, ny = (cy + dy[k]) % side;
            const auto &there = cells[static_cast<std::size_t>(ny * side + nx)];
            for (const Particle &a : here)
              for (const Particle &b : there) {
                if (k == 0 && b.id <= a.id)
                  continue;
                std::int64_t ddx = a.x - b.x, ddy = a.y - b.y;
                ddx -= (ddx > world / 2) ? world : (ddx < -world / 2) ? -world : 0;
                ddy -= (ddy > world / 2) ? world : (ddy < -world / 2) ? -world : 0;
                const std::int64_t d2 = ddx * ddx + ddy * ddy;
                if (d2 < kCut2)
                  pairs.emplace(std::make_pair(std::min(a.id, b.id), std::max(a.id, b.id)), d2);
              }
          }
        }
    }
    // Forces: a soft repulsion per pair, applied as a velocity kick read
    // back through the map (the pair list is what real codes iterate).
    std::vector<std::int64_t> kick(static_cast<std::size_t>(n), 0);
    for (const auto &[ids, d2] : pairs) {
      const std::int64_t f = (kCut2 - d2) >> 26;
      kick[static_cast<std::size_t>(ids.first)] += f;
      kick[static_cast<std::size_t>(ids.second)] -= f;
    }
    // Move; particles leaving their cell go to the new cell's list.
    leaving.clear();
    for (std::size_t c = 0; c < cells.size(); ++c)
      for (auto it = cells[c].begin(); it != cells[c].end(); ++it) {
        Particle &p = *it;
        const std::int64_t k = kick[static_cast<std::size_t>(p.id)];
        p.vx += (p.id & 1) ? k : -k;
        p.vy += (p.id & 2) ? k : -k;
        p.vx = std::max<std::int64_t>(-6000, std::min<std::int64_t>(6000, p.vx));
        p.vy = std::max<std::int64_t>(-6000, std::min<std::int64_t>(6000, p.vy));
        p.x = ((p.x + p.vx) % world + world) % world;
        p.y = ((p.y + p.vy) % world + world) % world;
        if (cellOf(p.x, p.y) != c)
          leaving.emplace_back(c, it);
      }
    for (auto &[c, it] : leaving) {
      const Particle p = *it;
      cells[c].erase(it);
      cells[cellOf(p.x, p.y)].push_back(p);
    }
    for (const auto &cell : cells)
      for (const Particle &p : cell)
        energy += static_cast<std::uint64_t>(p.vx * p.vx + p.vy * p.vy) >> 8;
  }
  std::uint64_t checksum = energy ^ (pairs.size() << 32);
  for (std::size_t c = 0; c < cells.size(); ++c)
    for (const Particle &p : cells[c])
      checksum = checksum * 1000003u + static_cast<std::uint64_t>(p.x * 3 + p.y * 7 + p.id) + c;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("md_cells particles=%lld steps=%lld time_ms=%.1f checksum=%llu peak_rss_bytes=%llu\n", n, steps, ms,
              static_cast<unsigned long long>(checksum), defero_bench::peakRssBytes());
  return 0;
}
