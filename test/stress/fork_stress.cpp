// fork_stress - fork(), posix_spawn, system(), popen() and vfork() while
// many threads hammer the allocator. Each fork is made from a worker thread
// (not main). The child frees blocks that other threads of the parent
// allocated before the fork (those threads do not exist in the child),
// allocates, starts a thread of its own, and exits through exit() so the
// library's destructors run in the child too.
//
//   fork_stress [hammer-threads] [forks]
//
// Prints "fork_stress: ok" and exits 0 only if every child succeeded and
// no block lost its contents.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include "defero/defero.h"

extern char **environ;

namespace {

// Blocks published by the hammer threads: a block is complete (its size in
// its first 8 bytes, the rest filled) before its pointer is swapped in, so
// whatever a forked child finds here it may verify and free. Lock-free on
// purpose: a mutex held by another thread at fork time would stay held in
// the child.
struct Slot {
  std::atomic<unsigned char *> p{nullptr};
};
constexpr unsigned kSlots = 4096;
Slot slots[kSlots];

std::atomic<bool> stop{false};
std::atomic<int> failures{0};
int container_id;

void fail(const char *what) {
  if (failures.fetch_add(1) < 20)
    std::fprintf(stderr, "fork_stress: check failed: %s\n", what);
}

unsigned char fillOf(std::size_t size) {
  return static_cast<unsigned char>(0x5A ^ (size * 131) ^ (size >> 8));
}

unsigned char *makeBlock(std::mt19937 &rng, std::size_t &size) {
  const unsigned r = rng() % 20;
  size = r == 0 ? 32768 + rng() % 200000 : r == 1 ? 32768 : 8 + rng() % 3000;
  unsigned char *p;
  if (r == 2 && __defero_hint_neighbor) {
    __defero_hint_neighbor(&container_id, slots[rng() % kSlots].p.load());
    p = static_cast<unsigned char *>(std::malloc(size));
  } else if (r == 3) {
    void *q = nullptr;
    p = posix_memalign(&q, 256, size) == 0 ? static_cast<unsigned char *>(q)
                                           : nullptr;
  } else {
    p = static_cast<unsigned char *>(std::malloc(size));
  }
  if (p) {
    std::memcpy(p, &size, sizeof size);
    std::memset(p + sizeof size, fillOf(size), size - sizeof size);
  }
  return p;
}

std::size_t sizeOf(const unsigned char *p) {
  std::size_t size;
  std::memcpy(&size, p, sizeof size);
  return size;
}

bool intact(const unsigned char *p) {
  const std::size_t size = sizeOf(p);
  if (size < 8 || size > (1u << 20))
    return false;
  const unsigned char f = fillOf(size);
  for (std::size_t i = sizeof size; i < size; ++i)
    if (p[i] != f)
      return false;
  return true;
}

void hammer(unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<void *> local;
  while (!stop.load(std::memory_order_relaxed)) {
    std::size_t size;
    unsigned char *p = makeBlock(rng, size);
    if (!p) {
      fail("malloc returned NULL");
      continue;
    }
    // Swap it into a published slot; verify and free (or realloc) the
    // block that was there.
    unsigned char *old = slots[rng() % kSlots].p.exchange(p);
    if (old) {
      if (!intact(old))
        fail("published block changed");
      if (rng() % 4 == 0)
        old = static_cast<unsigned char *>(std::realloc(old, sizeOf(old) * 2 + 1));
      std::free(old);
    }
    if (rng() % 8 == 0) {
      local.push_back(std::malloc(rng() % 100));
      if (local.size() > 64) {
        for (void *q : local)
          std::free(q);
        local.clear();
      }
    }
  }
  for (void *q : local)
    std::free(q);
}

/// What a child does: free what the parent's threads left published, use
/// the heap (containers, a thread of its own, large blocks), exit().
[[noreturn]] void child(int id) {
  int bad = 0;
  for (Slot &s : slots) {
    unsigned char *p = s.p.load();
    if (!p)
      continue;
    if (!intact(p))
      ++bad;
    std::free(p);
  }
  std::map<int, std::string> m;
  for (int i = 0; i < 5000; ++i)
    m[i] = std::string(static_cast<std::size_t>(i % 40), 'c');
  std::thread t([&m] {
    std::vector<std::string> v;
    for (int i = 0; i < 2000; ++i)
      v.emplace_back(static_cast<std::size_t>(i % 100), 'd');
    m.erase(m.begin(), m.find(2500));
  });
  t.join();
  void *big = std::malloc(1 << 20);
  std::memset(big, 1, 1 << 20);
  big = std::realloc(big, 3 << 20);
  std::free(big);
  if (m.size() != 2500)
    ++bad;
  std::exit(bad ? 10 + id % 100 : 0);
}

int waitChild(pid_t pid, const char *what) {
  int st = 0;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    std::fprintf(stderr, "fork_stress: %s child failed (status %#x)\n", what, st);
    return 1;
  }
  return 0;
}

void forker(int forks, int *bad) {
  for (int i = 0; i < forks; ++i) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      ++*bad;
      return;
    }
    if (pid == 0)
      child(i);
    *bad += waitChild(pid, "fork");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

/// vfork + exec: the child touches nothing but execve/_exit.
__attribute__((noinline)) int vforkTrue() {
  char arg0[] = "true";
  char *argv[] = {arg0, nullptr};
  pid_t pid = vfork();
  if (pid == 0) {
    execve("/bin/true", argv, environ);
    _exit(127);
  }
  return pid < 0 ? 1 : waitChild(pid, "vfork");
}

void spawner(int rounds, int *bad) {
  for (int i = 0; i < rounds; ++i) {
    // posix_spawn (glibc: clone(CLONE_VM|CLONE_VFORK), no fork handlers).
    pid_t pid;
    char arg0[] = "true";
    char *argv[] = {arg0, nullptr};
    if (posix_spawnp(&pid, "true", nullptr, nullptr, argv, environ) != 0) {
      ++*bad;
      fail("posix_spawnp");
    } else {
      *bad += waitChild(pid, "posix_spawn");
    }
    // system() and popen() from a thread while others allocate.
    if (std::system("exit 0") != 0) {
      ++*bad;
      fail("system");
    }
    FILE *f = popen("echo popen-ok", "r");
    char line[64] = {};
    if (!f || !std::fgets(line, sizeof line, f) ||
        std::strcmp(line, "popen-ok\n") != 0) {
      ++*bad;
      fail("popen output");
    }
    if (f && pclose(f) != 0) {
      ++*bad;
      fail("pclose status");
    }
    *bad += vforkTrue();
  }
}

} // namespace

int main(int argc, char **argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 6;
  const int forks = argc > 2 ? std::atoi(argv[2]) : 30;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back(hammer, 17u + static_cast<unsigned>(t));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  int bad_fork = 0, bad_spawn = 0;
  std::thread f1(forker, forks, &bad_fork);
  std::thread s1(spawner, forks / 3 + 1, &bad_spawn);
  f1.join();
  s1.join();
  stop = true;
  for (auto &t : pool)
    t.join();
  for (Slot &s : slots)
    if (unsigned char *p = s.p.load()) {
      if (!intact(p))
        fail("published block at exit");
      std::free(p);
    }
  if (bad_fork || bad_spawn || failures.load()) {
    std::fprintf(stderr, "fork_stress: %d fork, %d spawn, %d other failures\n",
                 bad_fork, bad_spawn, failures.load());
    return 1;
  }
  std::printf("fork_stress: ok (%d forks)\n", forks);
  return 0;
}
