// remote_stress - the cross-thread paths of the per-thread heaps, under
// LD_PRELOAD: blocks freed by a thread that did not allocate them (they go
// back through the owner's lock-free list), heaps whose thread exited while
// their blocks live on, fork while such frees are in flight, and many
// threads churning on two cores.
//
//   remote_stress producer-consumer|thread-exit|fork-in-flight|churn THREADS ROUNDS
//
// Every block carries a pattern derived from its address and size, written
// by its allocator and checked by whoever frees it, so a block handed out
// twice or reused while live is caught. Exit 0 and "remote_stress: ok ..."
// when every check held; a one-line reason and exit 1 otherwise.
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

[[noreturn]] void die(const std::string &why) {
  std::fprintf(stderr, "remote_stress: %s\n", why.c_str());
  std::exit(1);
}

struct Rng {
  std::uint64_t s;
  std::uint64_t operator()() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
};

std::size_t pickSize(Rng &r) {
  const std::uint64_t x = r() % 100;
  if (x < 70)
    return 8 + r() % 120; // list and tree nodes
  if (x < 95)
    return 128 + r() % 2000;
  return 4096 + r() % 40000; // past the small classes too
}

std::uint8_t tag(const void *p, std::size_t n) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return static_cast<std::uint8_t>((a >> 4) ^ (a >> 12) ^ n);
}

struct Block {
  unsigned char *p = nullptr;
  std::size_t n = 0;
};

Block make(Rng &r) {
  Block b;
  b.n = pickSize(r);
  b.p = static_cast<unsigned char *>(std::malloc(b.n));
  if (!b.p)
    die("malloc returned NULL");
  std::memset(b.p, tag(b.p, b.n), b.n);
  return b;
}

void check(const Block &b, const char *where) {
  const std::uint8_t t = tag(b.p, b.n);
  for (std::size_t i = 0; i < b.n; i += 1 + i / 8)
    if (b.p[i] != t)
      die(std::string(where) + ": a block's contents changed while it was live");
}

void release(const Block &b, const char *where) {
  check(b, where);
  std::free(b.p);
}

/// A bounded multi-producer multi-consumer queue under a mutex: only the
/// hand-off is serialised; allocation and free are the threads' own.
class Queue {
public:
  explicit Queue(std::size_t cap) : cap_(cap) {}
  bool push(const Block &b) {
    std::lock_guard<std::mutex> g(mu_);
    if (q_.size() >= cap_)
      return false;
    q_.push_back(b);
    return true;
  }
  bool pop(Block &b) {
    std::lock_guard<std::mutex> g(mu_);
    if (q_.empty())
      return false;
    b = q_.back();
    q_.pop_back();
    return true;
  }

private:
  std::mutex mu_;
  std::vector<Block> q_;
  std::size_t cap_;
};

long residentKiB() {
  FILE *f = std::fopen("/proc/self/statm", "r");
  long pages = 0, rss = 0;
  if (f) {
    if (std::fscanf(f, "%ld %ld", &pages, &rss) != 2)
      rss = 0;
    std::fclose(f);
  }
  return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/// Producers allocate, consumers free: a small block goes onto the
/// consumer's free stack of its class, and from there (when the stack is
/// flushed: full, every 64 spans taken, or at the consumer's exit) through
/// its owner's remote list. Resident memory must stay bounded (the owners
/// collect and reuse what comes back).
void producerConsumer(unsigned threads, unsigned rounds) {
  Queue q(4096);
  std::atomic<unsigned> producers_left{threads};
  std::atomic<std::uint64_t> made{0}, freed{0};
  std::vector<std::thread> ts;
  long peak_kib = 0;
  std::atomic<bool> stop_sampling{false};
  std::thread sampler([&] {
    while (!stop_sampling.load()) {
      const long r = residentKiB();
      if (r > peak_kib)
        peak_kib = r;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  for (unsigned t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      Rng r{0x9E3779B97F4A7C15ull * (t + 1)};
      for (unsigned i = 0; i < rounds; ++i) {
        Block b = make(r);
        made.fetch_add(1);
        while (!q.push(b))
          std::this_thread::yield();
      }
      producers_left.fetch_sub(1);
    });
  for (unsigned t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      Block b;
      for (;;) {
        if (q.pop(b)) {
          release(b, "consumer");
          freed.fetch_add(1);
        } else if (producers_left.load() == 0) {
          if (!q.pop(b))
            break;
          release(b, "consumer");
          freed.fetch_add(1);
        } else {
          std::this_thread::yield();
        }
      }
    });
  for (auto &t : ts)
    t.join();
  stop_sampling = true;
  sampler.join();
  if (made.load() != freed.load())
    die("producer-consumer: blocks made and freed differ");
  // At most 4096 blocks are live at once (the queue), under 40 KiB each
  // and mostly small: without reuse of remotely freed memory the run
  // would reach gigabytes.
  if (peak_kib > 512 * 1024)
    die("producer-consumer: resident memory grew to " + std::to_string(peak_kib) +
        " KiB: remotely freed blocks are not reused");
  std::printf("remote_stress: ok producer-consumer %llu blocks, peak RSS %ld KiB\n",
              static_cast<unsigned long long>(made.load()), peak_kib);
}

/// Threads allocate and exit; their blocks live on and are freed later by
/// others (the main thread, and new threads that adopt the exited threads'
/// heaps and allocate from them meanwhile).
void threadExit(unsigned threads, unsigned rounds) {
  std::vector<Block> kept;
  std::mutex mu;
  for (unsigned wave = 0; wave < 8; ++wave) {
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; ++t)
      ts.emplace_back([&, t, wave] {
        Rng r{(wave + 1) * 1315423911ull + t};
        std::vector<Block> mine;
        for (unsigned i = 0; i < rounds; ++i) {
          mine.push_back(make(r));
          if (r() % 3 == 0) { // some die young, freed by their own thread
            release(mine.back(), "owner");
            mine.pop_back();
          }
        }
        std::lock_guard<std::mutex> g(mu);
        kept.insert(kept.end(), mine.begin(), mine.end());
      });
    for (auto &t : ts)
      t.join();
    // Free half of what the exited threads left: remote frees into heaps
    // that have no thread (or whose new thread is the next wave).
    for (std::size_t i = 0; i < kept.size(); i += 2)
      release(kept[i], "after exit");
    std::vector<Block> rest;
    for (std::size_t i = 1; i < kept.size(); i += 2)
      rest.push_back(kept[i]);
    kept.swap(rest);
  }
  for (const Block &b : kept)
    release(b, "at the end");
  std::printf("remote_stress: ok thread-exit %u waves of %u threads\n", 8u, threads);
}

/// Threads free each other's blocks without pause while the main thread
/// forks; each child allocates, frees (also blocks the parent's threads
/// made) and exits 0.
void forkInFlight(unsigned threads, unsigned rounds) {
  std::atomic<bool> stop{false};
  constexpr std::size_t kSlots = 1024;
  std::vector<std::atomic<unsigned char *>> slots(kSlots);
  for (auto &s : slots)
    s = nullptr;
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      Rng r{77 + t};
      while (!stop.load(std::memory_order_relaxed)) {
        Block b = make(r);
        // Most likely another thread's block: a remote free.
        if (unsigned char *prev = slots[r() % kSlots].exchange(b.p))
          std::free(prev);
      }
    });
  int bad = 0;
  for (unsigned i = 0; i < rounds; ++i) {
    const pid_t pid = fork();
    if (pid < 0)
      die(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      Rng r{1000 + i};
      std::vector<Block> v;
      for (int j = 0; j < 2000; ++j)
        v.push_back(make(r));
      for (auto &s : slots) // blocks of the parent's threads, now orphans'
        if (unsigned char *p = s.exchange(nullptr))
          std::free(p);
      for (const Block &b : v)
        release(b, "child");
      _exit(0);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
      ++bad;
  }
  stop = true;
  for (auto &t : ts)
    t.join();
  for (auto &s : slots)
    if (unsigned char *p = s.exchange(nullptr))
      std::free(p);
  if (bad)
    die("fork-in-flight: " + std::to_string(bad) + " children failed");
  std::printf("remote_stress: ok fork-in-flight %u forks under %u threads\n", rounds, threads);
}

/// Many threads (more than cores) churn and hand blocks to each other
/// through a shared table of slots; every block is checked when freed.
void churn(unsigned threads, unsigned rounds) {
  constexpr std::size_t kSlots = 4096;
  struct Slot {
    std::mutex mu;
    Block b;
  };
  std::vector<Slot> slots(kSlots);
  std::vector<std::thread> ts;
  for (unsigned t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      Rng r{0xC0FFEEull * (t + 3)};
      std::vector<Block> own;
      for (unsigned i = 0; i < rounds; ++i) {
        Block b = make(r);
        if (r() % 2) {
          Slot &s = slots[r() % kSlots];
          Block old;
          {
            std::lock_guard<std::mutex> g(s.mu);
            old = s.b;
            s.b = b;
          }
          if (old.p)
            release(old, "churn (another thread's)");
        } else {
          own.push_back(b);
          if (own.size() > 64) {
            const std::size_t k = r() % own.size();
            release(own[k], "churn (own)");
            own[k] = own.back();
            own.pop_back();
          }
        }
      }
      for (const Block &b : own)
        release(b, "churn (own, at exit)");
    });
  for (auto &t : ts)
    t.join();
  for (Slot &s : slots)
    if (s.b.p)
      release(s.b, "churn (at the end)");
  std::printf("remote_stress: ok churn %u threads x %u blocks\n", threads, rounds);
}

unsigned parse(const char *s, const char *what, unsigned max) {
  char *end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(s, &end, 10);
  if (errno || end == s || *end || v == 0 || v > max || s[0] == '-')
    die(std::string(what) + " '" + s + "' is not valid; accepted: 1.." + std::to_string(max));
  return static_cast<unsigned>(v);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 4)
    die("usage: remote_stress producer-consumer|thread-exit|fork-in-flight|churn THREADS ROUNDS");
  const std::string mode = argv[1];
  const unsigned threads = parse(argv[2], "THREADS", 256);
  const unsigned rounds = parse(argv[3], "ROUNDS", 10000000);
  if (mode == "producer-consumer")
    producerConsumer(threads, rounds);
  else if (mode == "thread-exit")
    threadExit(threads, rounds);
  else if (mode == "fork-in-flight")
    forkInFlight(threads, rounds);
  else if (mode == "churn")
    churn(threads, rounds);
  else
    die("mode '" + mode + "' is not valid; accepted: producer-consumer, thread-exit, "
        "fork-in-flight, churn");
  return 0;
}
