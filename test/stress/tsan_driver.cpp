// tsan_driver - the process heap (Defero::core's sources, built with
// -fsanitize=thread) driven from many threads at once through the C API and
// the hint ABI: allocation of every size and kind, cross-thread frees, hints
// at other threads' blocks and at addresses where other threads are carving
// spans, container policies, statistics snapshots, and short-lived threads
// (heap slots given back and taken again). ThreadSanitizer reports every
// data race it sees; the test fails on the first one (halt_on_error=1).
//
//   tsan_driver [threads] [iterations]
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "defero/defero.h"

namespace {

std::mutex mu;
std::vector<void *> box;
int containers[16];
std::atomic<int> ready{0};

void *pick() {
  std::lock_guard<std::mutex> g(mu);
  return box.empty() ? nullptr : box[static_cast<std::size_t>(std::rand()) % box.size()];
}

void work(unsigned seed, int iters, int start_together) {
  std::mt19937 r(seed);
  ready.fetch_add(1);
  while (ready.load() < start_together) {
  }
  static const char *const preds[] = {"first", "best", "path", "auto"};
  for (int i = 0; i < iters; ++i) {
    const std::size_t n = r() % 8 == 0 ? 33000 + r() % 100000 : 16u << (r() % 11);
    void *hint = pick();
    if (hint && r() % 2) // where other threads may be carving spans right now
      hint = static_cast<char *>(hint) + 65536 * (1 + r() % 64);
    const void *c = &containers[r() % 16];
    void *p = nullptr;
    switch (r() % 7) {
    case 0:
      p = defero_malloc(n);
      break;
    case 1:
      p = defero_alloc_near(n, hint);
      break;
    case 2:
      p = defero_alloc_path(n, r(), r() % 20);
      break;
    case 3:
      __defero_hint_neighbor(c, hint);
      p = defero_malloc(n);
      break;
    case 4:
      __defero_hint_tree(c, hint, static_cast<int>(r() % 2));
      p = defero_malloc(n);
      break;
    case 5:
      __defero_hint_container(c);
      p = defero_malloc(n);
      break;
    default: {
      if (r() % 8 == 0)
        __defero_container_policy(c, preds[r() % 4], static_cast<int>(r() % 33));
      // The fused entry. This process's operator new is ThreadSanitizer's
      // (the runtime is linked here without its overrides), so the entry
      // sends the one-shot hint and calls it, as it does for any program
      // with its own operator new: the block goes back by operator delete.
      void *o = __defero_new_hinted(n, 1 + static_cast<int>(r() % 3), c, hint,
                                    static_cast<int>(r() % 2));
      std::memset(o, 1, n < 64 ? n : 64);
      ::operator delete(o);
      p = defero_malloc(n); // takes the hint left pending
      break;
    }
    }
    std::memset(p, 1, n < 64 ? n : 64);
    (void)defero_usable_size(p);
    (void)defero_class_of(p);
    void *q = nullptr;
    {
      std::lock_guard<std::mutex> g(mu);
      if (box.size() < 300) {
        box.push_back(p);
      } else {
        const std::size_t k = r() % box.size();
        q = box[k];
        box[k] = p;
      }
    }
    defero_free(q);
    if (i % 500 == 0) {
      FILE *f = std::fopen("/dev/null", "w");
      defero_stats_json(f);
      std::fclose(f);
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 8;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 3000;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back(work, static_cast<unsigned>(t), iters, threads);
  for (auto &t : pool)
    t.join();
  for (int round = 0; round < 30; ++round) { // threads come and go
    std::thread a(work, 100u + static_cast<unsigned>(round), iters / 20, 0);
    std::thread b(work, 200u + static_cast<unsigned>(round), iters / 20, 0);
    a.join();
    b.join();
  }
  for (void *p : box)
    defero_free(p);
  std::printf("tsan_driver: ok\n");
  return 0;
}
