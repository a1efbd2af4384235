// mt_stress - adversarial multithreaded workload for libdefero (run under
// LD_PRELOAD or linked). Many more threads than cores allocate blocks of
// every kind (malloc, calloc, realloc, aligned, operator new, hinted new),
// hand them to each other through shared mailboxes, verify and free or
// realloc them on other threads (realloc ping-pong), while short-lived
// threads come and go (an exited thread's heap is adopted by the next new
// one) and every thread sends hints
// at other threads' blocks (live, freed, or garbage) through the hint ABI.
//
//   mt_stress [threads] [ops-per-thread] [churn-threads]
//
// Every block carries a fill byte that is checked before it is freed or
// reallocated, so overlapping blocks, lost contents and calloc garbage are
// caught. Exits 0 and prints "mt_stress: ok" only if every check passed.
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <malloc.h>
#include <map>
#include <mutex>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "defero/defero.h"

namespace {

enum Kind : std::uint8_t { kMalloc, kCalloc, kAligned, kNew, kNewAligned, kHintedNew };

struct Block {
  unsigned char *p = nullptr;
  std::size_t size = 0;
  std::size_t align = 0;
  unsigned char fill = 0;
  Kind kind = kMalloc;
};

constexpr unsigned kShards = 16;
constexpr unsigned kShardCap = 256;
struct alignas(64) Shard {
  std::mutex m;
  Block b[kShardCap];
  unsigned n = 0;
};
Shard shards[kShards];

std::atomic<int> failures{0};
std::atomic<long> ops_done{0};
std::atomic<bool> stop_churn{false};
int containers[64]; // addresses used as container identities for hints

void fail(const char *what, const void *p, std::size_t n) {
  if (failures.fetch_add(1) < 20)
    std::fprintf(stderr, "mt_stress: check failed: %s (p=%p size=%zu)\n", what,
                 p, n);
}

// Class boundaries of the K-Bit heap and the small/large limit.
constexpr std::size_t kEdges[] = {16,   32,   48,   64,    128,   256,   320,
                                  1024, 1280, 4096, 8192,  10240, 16384, 28672,
                                  32768, 32769, 65536, 131072, 4u << 20};

std::size_t pickSize(std::mt19937_64 &rng) {
  const unsigned r = rng() % 100;
  if (r < 40)
    return rng() % 257;
  if (r < 65)
    return 257 + rng() % 3840;
  if (r < 85) {
    const std::size_t e = kEdges[rng() % (sizeof kEdges / sizeof *kEdges - 1)];
    return e - 1 + rng() % 3; // e-1, e, e+1
  }
  if (r < 95)
    return 4097 + rng() % 28700;
  return 32768 + rng() % 300000;
}

bool verify(const Block &b, const char *when) {
  if (!b.p)
    return true;
  if (b.align && reinterpret_cast<std::uintptr_t>(b.p) % b.align) {
    fail("alignment lost", b.p, b.size);
    return false;
  }
  for (std::size_t i = 0; i < b.size; ++i)
    if (b.p[i] != b.fill) {
      char msg[96];
      std::snprintf(msg, sizeof msg, "%s: byte %zu is %#x, want %#x", when, i,
                    b.p[i], b.fill);
      fail(msg, b.p, b.size);
      return false;
    }
  return true;
}

void release(Block &b) {
  switch (b.kind) {
  case kNew:
  case kHintedNew:
    ::operator delete(b.p);
    break;
  case kNewAligned:
    ::operator delete[](b.p, std::align_val_t(b.align));
    break;
  default:
    std::free(b.p);
  }
  b.p = nullptr;
}

/// A block (any thread's) currently in a mailbox, to hint at. It may be
/// freed and even reused by the time the hint is consumed: hints are
/// advisory, and a stale one must be harmless.
const void *someoneElsesBlock(std::mt19937_64 &rng) {
  Shard &s = shards[rng() % kShards];
  std::lock_guard<std::mutex> g(s.m);
  return s.n ? s.b[rng() % s.n].p : nullptr;
}

const void *oddHint(std::mt19937_64 &rng, const void *good) {
  static int on_data;
  switch (rng() % 8) {
  case 0:
    return nullptr;
  case 1:
    return reinterpret_cast<const void *>(1);
  case 2:
    return &on_data;
  case 3:
    return reinterpret_cast<const void *>(
        reinterpret_cast<std::uintptr_t>(&rng) & ~std::uintptr_t{15}); // stack
  case 4:
    return good ? static_cast<const char *>(good) + 8 : nullptr; // interior
  case 5:
    return reinterpret_cast<const void *>(~std::uintptr_t{0xF});
  default:
    return good;
  }
}

void setHint(std::mt19937_64 &rng) {
  const void *c = &containers[rng() % 64];
  const void *w = oddHint(rng, someoneElsesBlock(rng));
  switch (rng() % 4) {
  case 0:
    __defero_hint_neighbor(c, w);
    break;
  case 1:
    __defero_hint_tree(c, w, static_cast<int>(rng() % 2));
    break;
  case 2:
    __defero_hint_container(c);
    break;
  default:
    break;
  }
  if (rng() % 64 == 0) {
    static const char *const preds[] = {"first", "best", "match", "path", "auto"};
    __defero_container_policy(c, preds[rng() % 5], static_cast<int>(rng() % 33));
  }
}

Block make(std::mt19937_64 &rng) {
  Block b;
  b.size = pickSize(rng);
  b.fill = static_cast<unsigned char>(1 + rng() % 255);
  const unsigned r = rng() % 100;
  const bool hinted = __defero_hint_neighbor && rng() % 3 == 0;
  if (hinted)
    setHint(rng);
  if (r < 45) {
    b.kind = kMalloc;
    b.p = static_cast<unsigned char *>(std::malloc(b.size));
  } else if (r < 60) {
    b.kind = kCalloc;
    const std::size_t n = 1 + rng() % 4;
    b.size = b.size / n * n;
    b.p = static_cast<unsigned char *>(std::calloc(n, b.size / n));
    if (b.p)
      for (std::size_t i = 0; i < b.size; ++i)
        if (b.p[i]) {
          fail("calloc block not zero", b.p, b.size);
          break;
        }
  } else if (r < 72) {
    b.kind = kAligned;
    b.align = std::size_t{1} << (3 + rng() % 15); // 8 .. 128 KiB
    void *q = nullptr;
    if (rng() % 2) {
      if (posix_memalign(&q, b.align, b.size) != 0)
        q = nullptr;
    } else {
      q = aligned_alloc(b.align, b.size);
    }
    b.p = static_cast<unsigned char *>(q);
  } else if (r < 82) {
    b.kind = kNew;
    b.p = static_cast<unsigned char *>(::operator new(b.size));
  } else if (r < 90) {
    b.kind = kNewAligned;
    b.align = std::size_t{32} << (rng() % 8); // 32 .. 4096
    b.p = static_cast<unsigned char *>(
        ::operator new[](b.size, std::align_val_t(b.align)));
  } else if (__defero_new_hinted) {
    b.kind = kHintedNew;
    b.size %= 4096;
    const void *w = oddHint(rng, someoneElsesBlock(rng));
    b.p = static_cast<unsigned char *>(
        __defero_new_hinted(b.size, static_cast<int>(rng() % 5),
                            &containers[rng() % 64], w, static_cast<int>(rng() % 2)));
  } else {
    b.kind = kMalloc;
    b.p = static_cast<unsigned char *>(std::malloc(b.size));
  }
  if (!b.p) {
    fail("allocation returned NULL", nullptr, b.size);
    return b;
  }
  if (b.align && reinterpret_cast<std::uintptr_t>(b.p) % b.align)
    fail("misaligned block", b.p, b.align);
  if (malloc_usable_size(b.p) < b.size)
    fail("malloc_usable_size < requested", b.p, b.size);
  std::memset(b.p, b.fill, b.size);
  return b;
}

/// Takes a block another thread made: verify it, then free it or realloc it
/// and send it on (it may cross several threads before it dies).
void consume(Block b, std::mt19937_64 &rng) {
  if (!verify(b, "handed-off block"))
    return; // leak it: its memory is suspect
  if (b.kind == kMalloc || b.kind == kCalloc) {
    if (rng() % 3 == 0) {
      const std::size_t nsz = rng() % 2 ? pickSize(rng) : b.size / 2 + 1;
      if (rng() % 4 == 0 && __defero_hint_neighbor)
        setHint(rng);
      auto *q = static_cast<unsigned char *>(std::realloc(b.p, nsz));
      if (!q && nsz == 0)
        return; // glibc's realloc(p, 0): p freed, NULL returned
      if (!q) {
        fail("realloc returned NULL", b.p, nsz);
        return;
      }
      const std::size_t keep = nsz < b.size ? nsz : b.size;
      for (std::size_t i = 0; i < keep; ++i)
        if (q[i] != b.fill) {
          fail("realloc lost contents", q, nsz);
          return;
        }
      if (malloc_usable_size(q) < nsz)
        fail("malloc_usable_size < realloc size", q, nsz);
      b.p = q;
      b.size = nsz;
      b.kind = kMalloc;
      b.fill = static_cast<unsigned char>(1 + rng() % 255);
      std::memset(b.p, b.fill, b.size);
      Shard &s = shards[rng() % kShards];
      std::unique_lock<std::mutex> g(s.m);
      if (s.n < kShardCap) {
        s.b[s.n++] = b;
        return;
      }
    }
  }
  release(b);
}

void put(Block b, std::mt19937_64 &rng) {
  Shard &s = shards[rng() % kShards];
  Block victim;
  {
    std::lock_guard<std::mutex> g(s.m);
    if (s.n < kShardCap) {
      s.b[s.n++] = b;
      return;
    }
    const unsigned i = static_cast<unsigned>(rng() % kShardCap);
    victim = s.b[i];
    s.b[i] = b;
  }
  consume(victim, rng);
}

bool take(Block &out, std::mt19937_64 &rng) {
  Shard &s = shards[rng() % kShards];
  std::lock_guard<std::mutex> g(s.m);
  if (!s.n)
    return false;
  const unsigned i = static_cast<unsigned>(rng() % s.n);
  out = s.b[i];
  s.b[i] = s.b[--s.n];
  return true;
}

/// Some real containers too: list and map nodes freed by whoever clears.
void containerRound(std::mt19937_64 &rng) {
  std::map<int, std::vector<int>> m;
  std::list<std::string> l;
  for (int i = 0; i < 300; ++i) {
    const int k = static_cast<int>(rng() % 1000);
    m[k].push_back(i);
    l.emplace_back(static_cast<std::size_t>(rng() % 64), 'x');
  }
  long n = 0;
  for (auto &[k, v] : m)
    n += static_cast<long>(v.size());
  if (n != 300 || l.size() != 300)
    fail("container contents", nullptr, static_cast<std::size_t>(n));
}

void worker(unsigned seed, long ops) {
  std::mt19937_64 rng(seed);
  for (long i = 0; i < ops; ++i) {
    const unsigned r = rng() % 100;
    if (r < 55) {
      Block b = make(rng);
      if (b.p)
        put(b, rng);
    } else if (r < 98) {
      Block b;
      if (take(b, rng))
        consume(b, rng);
    } else {
      containerRound(rng);
    }
  }
  ops_done.fetch_add(ops);
}

/// Threads that live for a few dozen allocations: their heap slot is given
/// back at exit while their blocks are still being used and freed elsewhere.
void churner(unsigned seed) {
  std::mt19937_64 rng(seed);
  unsigned n = 0;
  while (!stop_churn.load(std::memory_order_relaxed)) {
    std::thread t([s = rng()] {
      std::mt19937_64 r(s);
      for (int i = 0; i < 40; ++i) {
        Block b = make(r);
        if (b.p)
          put(b, r);
        Block c;
        if (i % 3 == 0 && take(c, r))
          consume(c, r);
      }
    });
    t.join();
    ++n;
  }
  if (n == 0)
    fail("churner made no threads", nullptr, 0);
}

} // namespace

int main(int argc, char **argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 12;
  const long ops = argc > 2 ? std::atol(argv[2]) : 20000;
  const int churners = argc > 3 ? std::atoi(argv[3]) : 2;
  if (!__defero_hint_neighbor)
    std::fprintf(stderr, "mt_stress: note: no Defero runtime, hints off\n");
  std::vector<std::thread> pool, churn;
  for (int c = 0; c < churners; ++c)
    churn.emplace_back(churner, 999u + static_cast<unsigned>(c));
  for (int t = 0; t < threads; ++t)
    pool.emplace_back(worker, 4242u + static_cast<unsigned>(t), ops);
  for (auto &t : pool)
    t.join();
  stop_churn = true;
  for (auto &t : churn)
    t.join();
  std::mt19937_64 rng(1);
  for (Shard &s : shards)
    for (unsigned i = 0; i < s.n; ++i)
      if (verify(s.b[i], "block at exit"))
        release(s.b[i]);
  if (failures.load()) {
    std::fprintf(stderr, "mt_stress: %d failures\n", failures.load());
    return 1;
  }
  std::printf("mt_stress: ok (%d threads, %ld ops)\n", threads, ops_done.load());
  return 0;
}
