// edge_program - single behaviours checked in a process of their own, under
// libdefero (LD_PRELOAD):
//
//   edge_program memalign-any-alignment - glibc's memalign accepts any
//       alignment and rounds it up to a power of two (0 and anything up to
//       16 mean malloc's own); valloc/pvalloc/aligned_alloc style callers
//       rely on it. Every call must give a usable, suitably aligned block.
//   edge_program fork-children-exit     - the parent allocates blocks of
//       sizes 7001..7500 (one each, nothing else allocates those sizes) and
//       forks children that allocate other sizes and leave through exit();
//       run under DEFERO_TRACE, trace_check.py then counts the parent's
//       events: each must be in the trace exactly once.
//   edge_program fork-exec              - the same parent, whose two
//       children exec this program again (mode exec-child: 1000 strings
//       made and freed); under DEFERO_TRACE with %p each process, the new
//       images too, writes a trace file of its own.
//
// Prints "edge_program: <mode> ok" when the program's own checks pass.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

int memalignAnyAlignment() {
  int bad = 0;
  const std::size_t aligns[] = {0, 1, 2, 3, 5, 12, 24, 48, 100, 1000, 3000, 5000, 40000};
  for (std::size_t a : aligns)
    for (std::size_t n : {std::size_t{1}, std::size_t{10}, std::size_t{1000},
                          std::size_t{40000}}) {
      errno = 0;
      void *p = memalign(a, n);
      std::size_t want = 1;
      while (want < a)
        want *= 2;
      if (!p) {
        std::fprintf(stderr,
                     "edge_program: memalign(%zu, %zu) = NULL, errno %d (glibc "
                     "rounds the alignment up to %zu)\n",
                     a, n, errno, want);
        ++bad;
        continue;
      }
      if (reinterpret_cast<std::uintptr_t>(p) % want != 0 || malloc_usable_size(p) < n) {
        std::fprintf(stderr, "edge_program: memalign(%zu, %zu) = %p misaligned or short\n",
                     a, n, p);
        ++bad;
      }
      std::memset(p, 1, n);
      std::free(p);
    }
  return bad ? 1 : 0;
}

/// The parent of the fork modes: blocks of sizes 7001..7500 (one each,
/// nothing else allocates those sizes), `children` children that each run
/// `child` (which must not return), then the blocks freed. 0 if every
/// child exited 0.
template <class Child> int parentOfChildren(int children, Child child) {
  std::vector<void *> mine;
  for (std::size_t n = 7001; n <= 7500; ++n)
    mine.push_back(std::malloc(n));
  for (int c = 0; c < children; ++c) {
    const pid_t pid = fork();
    if (pid < 0)
      return 2;
    if (pid == 0)
      child();
    int st = 0;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
      return 1;
  }
  for (void *p : mine)
    std::free(p);
  return 0;
}

int forkChildrenExit() {
  return parentOfChildren(3, [] {
    std::vector<std::string> v;
    for (int i = 0; i < 1000; ++i)
      v.emplace_back(static_cast<std::size_t>(20 + i % 200), 'c');
    std::exit(0); // destructors run: the library's too
  });
}

int forkExec() {
  return parentOfChildren(2, [] {
    execl("/proc/self/exe", "edge_program", "exec-child", static_cast<char *>(nullptr));
    std::_Exit(3);
  });
}

int execChild() {
  std::vector<std::string> v;
  for (int i = 0; i < 1000; ++i)
    v.emplace_back(static_cast<std::size_t>(20 + i % 200), 'e');
  return v.size() == 1000 ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  int rc = 2;
  if (mode == "memalign-any-alignment")
    rc = memalignAnyAlignment();
  else if (mode == "fork-children-exit")
    rc = forkChildrenExit();
  else if (mode == "fork-exec")
    rc = forkExec();
  else if (mode == "exec-child")
    rc = execChild();
  if (rc == 0)
    std::printf("edge_program: %s ok\n", mode.c_str());
  return rc;
}
