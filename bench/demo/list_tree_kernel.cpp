// list_tree_kernel - the list and tree micro-kernels of the Defero paper
// (section 6), timed phase by phase. Run it under different allocators
// (plain, LD_PRELOAD=libdefero.so) and compare; `--hints` makes the kernel
// send the container hints itself, exactly where the compiler plugin will
// insert them (push_back/push_front: the neighbour node; set insert: the
// parent the new node is attached under), so their effect can be seen
// before the plugin exists.
//
//   list_tree_kernel [--hints] [--list N] [--tree N] [--seed S]
//
// Prints one line per phase: "<kernel> <phase> <milliseconds> <checksum>".
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "defero/defero.h" // the hint ABI: weak, no-ops without libdefero

namespace {

bool send_hints = false;

template <class F> double timed(F &&f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

void report(const char *kernel, const char *phase, double ms, long long sum) {
  std::printf("%s %s %.3f %lld\n", kernel, phase, ms, sum);
}

void hintNeighbor(const void *container, const void *neighbor) {
  if (send_hints && __defero_hint_neighbor)
    __defero_hint_neighbor(container, neighbor);
}

/// The parent a new key is attached under in libstdc++'s red-black tree,
/// and the side: the successor if it has no left child, else the
/// predecessor (whose right child is then free). Uses the iterator's public
/// _M_node, as the plugin uses the node it sees in the IR.
void hintTree(const std::set<int> &s, int key) {
  if (!send_hints || !__defero_hint_tree)
    return;
  auto it = s.lower_bound(key);
  if (it != s.end() && *it == key)
    return; // no node will be made
  const std::_Rb_tree_node_base *succ = it._M_node;
  if (it == s.end() || succ->_M_left == nullptr) {
    if (s.empty())
      __defero_hint_tree(&s, nullptr, 1);
    else if (it == s.end())
      __defero_hint_tree(&s, std::prev(it)._M_node, 0);
    else
      __defero_hint_tree(&s, succ, 1);
  } else {
    __defero_hint_tree(&s, std::prev(it)._M_node, 0);
  }
}

void listKernel(std::size_t n, std::mt19937 &rng) {
  long long sum = 0;
  // Warm the heap as the paper does: 2N small objects, a random half freed.
  std::vector<int *> warm(2 * n);
  double ms = timed([&] {
    for (auto &p : warm)
      p = new int[6]; // 24 bytes, the size of a list<int> node
    std::shuffle(warm.begin(), warm.end(), rng);
    for (std::size_t i = 0; i < n; ++i)
      delete[] warm[i];
  });
  report("list", "warm", ms, 0);

  std::list<int> l;
  std::vector<int> values(n);
  for (auto &v : values)
    v = static_cast<int>(rng() % 1000000);
  ms = timed([&] {
    for (std::size_t i = 0; i < n; ++i) {
      if (i % 2 == 0) {
        if (!l.empty())
          hintNeighbor(&l, &l.back());
        l.push_back(values[i]);
      } else {
        hintNeighbor(&l, &l.front());
        l.push_front(values[i]);
      }
    }
  });
  report("list", "build", ms, static_cast<long long>(l.size()));

  ms = timed([&] {
    std::for_each(l.begin(), l.end(), [](int &x) { ++x; });
  });
  for (int x : l)
    sum += x;
  report("list", "for_each", ms, sum);

  ms = timed([&] { l.sort(); });
  report("list", "sort", ms, l.front() + static_cast<long long>(l.back()));

  ms = timed([&] {
    std::for_each(l.begin(), l.end(), [](int &x) { ++x; });
  });
  report("list", "for_each_sorted", ms, l.front());

  ms = timed([&] { l.clear(); });
  report("list", "clear", ms, static_cast<long long>(l.size()));
  for (std::size_t i = n; i < 2 * n; ++i)
    delete[] warm[i];
}

void treeKernel(std::size_t n, std::mt19937 &rng) {
  // Warm: a set of 3N keys, a random N of them erased.
  std::set<int> warm;
  std::vector<int> keys(3 * n);
  double ms = timed([&] {
    for (auto &k : keys) {
      k = static_cast<int>(rng());
      warm.insert(k);
    }
    std::shuffle(keys.begin(), keys.end(), rng);
    for (std::size_t i = 0; i < n; ++i)
      warm.erase(keys[i]);
  });
  report("tree", "warm", ms, static_cast<long long>(warm.size()));

  std::set<int> s;
  std::vector<int> values(n);
  for (auto &v : values)
    v = static_cast<int>(rng() % (8 * n));
  ms = timed([&] {
    for (int v : values) {
      hintTree(s, v);
      s.insert(v);
    }
  });
  report("tree", "build", ms, static_cast<long long>(s.size()));

  std::shuffle(values.begin(), values.end(), rng);
  long long found = 0;
  ms = timed([&] {
    for (int v : values)
      found += s.find(v) != s.end();
  });
  report("tree", "find", ms, found);

  long long sum = 0;
  ms = timed([&] {
    std::for_each(s.begin(), s.end(), [&](int x) { sum += x; });
  });
  report("tree", "for_each", ms, sum);

  ms = timed([&] { std::set<int>().swap(s); });
  report("tree", "destroy", ms, static_cast<long long>(s.size()));
}

std::size_t parseCount(const char *flag, const char *v) {
  char *end = nullptr;
  unsigned long long n = std::strtoull(v ? v : "", &end, 10);
  if (!v || !*v || *end || n == 0 || n > 100000000ull) {
    std::fprintf(stderr, "list_tree_kernel: %s needs a count from 1 to 1e8, got '%s'\n",
                 flag, v ? v : "");
    std::exit(2);
  }
  return static_cast<std::size_t>(n);
}

} // namespace

int main(int argc, char **argv) {
  std::size_t list_n = 1000000, tree_n = 300000, seed = 42;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--hints"))
      send_hints = true;
    else if (!std::strcmp(argv[i], "--list"))
      list_n = parseCount("--list", i + 1 < argc ? argv[++i] : nullptr);
    else if (!std::strcmp(argv[i], "--tree"))
      tree_n = parseCount("--tree", i + 1 < argc ? argv[++i] : nullptr);
    else if (!std::strcmp(argv[i], "--seed"))
      seed = parseCount("--seed", i + 1 < argc ? argv[++i] : nullptr);
    else {
      std::fprintf(stderr,
                   "list_tree_kernel: unknown argument '%s'\n"
                   "usage: list_tree_kernel [--hints] [--list N] [--tree N] [--seed S]\n",
                   argv[i]);
      return 2;
    }
  }
  std::mt19937 rng(static_cast<unsigned>(seed));
  listKernel(list_n, rng);
  treeKernel(tree_n, rng);
  return 0;
}
