// fork_program - forks while other threads allocate (the fork handlers must
// leave the child a consistent heap), then allocates in parent and children.
// Exits 0 only if every child reports success.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

std::atomic<bool> stop{false};

void churn(unsigned seed) {
  std::vector<void *> held;
  unsigned x = seed;
  while (!stop.load(std::memory_order_relaxed)) {
    x = x * 1103515245u + 12345u;
    if (held.size() < 1000 && (x >> 16) % 3 != 0) {
      held.push_back(std::malloc(1 + (x >> 8) % 3000));
    } else if (!held.empty()) {
      std::free(held.back());
      held.pop_back();
    }
  }
  for (void *p : held)
    std::free(p);
}

int childWork(int id) {
  std::map<int, std::string> m;
  for (int i = 0; i < 20000; ++i)
    m[i] = std::string(static_cast<std::size_t>(i % 50), static_cast<char>('a' + id % 26));
  for (int i = 0; i < 20000; i += 2)
    m.erase(i);
  long total = 0;
  for (auto &[k, v] : m)
    total += static_cast<long>(v.size());
  // sizes i%50 over odd i < 20000: 400 periods of the odd residues 1..49
  return total == 400L * 625 ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  const int children = argc > 1 ? std::atoi(argv[1]) : 24;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 2; ++t)
    threads.emplace_back(churn, 77u + t);
  int bad = 0;
  for (int i = 0; i < children; ++i) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("fork");
      return 2;
    }
    if (pid == 0)
      _exit(childWork(i));
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "fork_program: child %d failed (status %d)\n", i, status);
      ++bad;
    }
  }
  stop = true;
  for (auto &t : threads)
    t.join();
  if (childWork(99) != 0)
    ++bad;
  if (bad)
    return 1;
  std::printf("fork_program: %d children ok\n", children);
  return 0;
}
