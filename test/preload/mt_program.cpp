// mt_program - a multithreaded C++ program that stresses an allocator the
// way real programs do: containers on every thread, and blocks handed to
// other threads to free (cross-thread free). Exits 0 only if every checksum
// and every block's contents come out right.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

struct Block {
  unsigned char *data;
  std::size_t size;
  unsigned char fill;
};

std::mutex queue_mutex;
std::vector<Block> handoff; // blocks made by one thread, freed by another
std::atomic<int> failures{0};

void check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "mt_program: check failed: %s\n", what);
    failures.fetch_add(1);
  }
}

void worker(unsigned seed, int rounds) {
  std::mt19937 rng(seed);
  for (int r = 0; r < rounds; ++r) {
    std::list<int> l;
    std::map<int, std::string> m;
    std::set<long> s;
    std::unordered_map<int, std::vector<int>> u;
    long expect = 0;
    for (int i = 0; i < 2000; ++i) {
      int v = static_cast<int>(rng() % 100000);
      (i % 2 ? l.push_back(v) : l.push_front(v));
      m[v] = std::to_string(v);
      s.insert(v);
      u[v % 97].push_back(v);
      expect += v;
    }
    long sum = 0;
    for (int v : l)
      sum += v;
    check(sum == expect, "list sum");
    for (auto &[k, str] : m)
      check(std::stoi(str) == k, "map value");
    l.sort();
    check(std::is_sorted(l.begin(), l.end()), "list sorted");
    // Hand blocks of assorted sizes to whoever frees next.
    for (int i = 0; i < 200; ++i) {
      std::size_t n = 1 + rng() % (i % 10 == 0 ? 100000 : 512);
      auto *p = static_cast<unsigned char *>(std::malloc(n));
      check(p != nullptr, "malloc");
      unsigned char f = static_cast<unsigned char>(rng());
      std::memset(p, f, n);
      std::lock_guard<std::mutex> g(queue_mutex);
      handoff.push_back({p, n, f});
    }
    std::vector<Block> mine;
    {
      std::lock_guard<std::mutex> g(queue_mutex);
      std::size_t take = handoff.size() / 2;
      mine.assign(handoff.end() - static_cast<long>(take), handoff.end());
      handoff.resize(handoff.size() - take);
    }
    for (Block &b : mine) {
      bool intact = true;
      for (std::size_t i = 0; i < b.size; ++i)
        intact &= b.data[i] == b.fill;
      check(intact, "handed-off block intact");
      b.data = static_cast<unsigned char *>(std::realloc(b.data, b.size * 2));
      check(b.data != nullptr && b.data[b.size - 1] == b.fill,
            "realloc kept contents");
      std::free(b.data);
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 4;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 20;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back(worker, 1234u + static_cast<unsigned>(t), rounds);
  for (auto &t : pool)
    t.join();
  for (Block &b : handoff)
    std::free(b.data);
  if (failures.load()) {
    std::fprintf(stderr, "mt_program: %d failures\n", failures.load());
    return 1;
  }
  std::printf("mt_program: %d threads x %d rounds ok\n", threads, rounds);
  return 0;
}
