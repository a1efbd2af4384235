// tree_kernel_input.h - the tree kernel's input, shared by
// kernels_benchmark.cc (BM_TreeKernel) and tree_model.cc, so that the model
// replays the very set the benchmark times: the heap warmed as the paper
// does (a set of 3N random keys, a random N of them erased; the set stays
// live through the build), then N random keys to insert and N to find,
// drawn from [0, 8N).
#pragma once

#include <algorithm>
#include <cstddef>
#include <random>
#include <set>
#include <vector>

struct TreeKernelInput {
  std::vector<int> insert, probe;
};

/// Warms the heap into `warm` (the caller keeps it through the build) and
/// draws the inserts and probes, all from one generator seeded seed + 1.
inline TreeKernelInput treeKernelInput(std::size_t n, unsigned seed, std::set<int> &warm) {
  std::mt19937 rng(seed + 1);
  std::vector<int> keys(3 * n);
  for (auto &k : keys) {
    k = static_cast<int>(rng());
    warm.insert(k);
  }
  std::shuffle(keys.begin(), keys.end(), rng);
  for (std::size_t i = 0; i < n; ++i)
    warm.erase(keys[i]);
  TreeKernelInput in{std::vector<int>(n), std::vector<int>(n)};
  for (auto &k : in.insert)
    k = static_cast<int>(rng() % (8 * n));
  for (auto &k : in.probe)
    k = static_cast<int>(rng() % (8 * n));
  return in;
}
