// os.h - every operating-system call the runtime makes, in one place.
//
// Nothing else in runtime/ includes <sys/mman.h>, <unistd.h> or <fcntl.h>;
// layers reach the OS only through these functions. None of them allocate,
// so they are safe to call from inside malloc.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace defero::os {

inline constexpr std::size_t kPageBytes = 4096;

/// Reserves `bytes` of address space with no access and no commit charge.
/// Returns nullptr on failure.
inline void *reserve(std::size_t bytes) {
  void *p = ::mmap(nullptr, bytes, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

/// Makes a reserved range readable and writable (committed on first touch).
inline bool commit(void *p, std::size_t bytes) {
  return ::mprotect(p, bytes, PROT_READ | PROT_WRITE) == 0;
}

/// Maps `bytes` of fresh zeroed read-write memory. nullptr on failure.
inline void *map(std::size_t bytes) {
  void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

/// Maps `bytes` of read-write memory that is committed only when touched and
/// charged to nobody until then: for sparse metadata tables.
inline void *map_sparse(std::size_t bytes) {
  void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

/// Tells the processor that this is a spin-wait loop (x86 PAUSE: less
/// power, no memory-order mis-speculation when the lock is released).
inline void pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Gives the processor to another thread (spin-lock back-off).
inline void yield() { ::sched_yield(); }

/// Sleeps while the 32-bit word at `word` still holds `seen` (a futex wait;
/// returns at once if it does not, and may return spuriously). For locks
/// whose waiters must not spin while the thread they wait for is off the
/// processor.
inline void waitWhile(const void *word, unsigned seen) {
  ::syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, nullptr, nullptr, 0);
}

/// Wakes every thread sleeping in waitWhile on `word`.
inline void wakeAll(const void *word) {
  ::syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 0x7fffffff, nullptr, nullptr, 0);
}

inline void unmap(void *p, std::size_t bytes) { ::munmap(p, bytes); }

/// Calls a function with a per-thread value when that thread exits (a
/// pthread key with a destructor; glibc keeps the first keys' values in the
/// thread descriptor, so set() does not allocate).
class ThreadExitHook {
public:
  using Fn = void (*)(void *);
  /// Creates the hook once; false if the system is out of keys.
  bool init(Fn fn) {
    if (ready_)
      return true;
    ready_ = ::pthread_key_create(&key_, fn) == 0;
    return ready_;
  }
  /// Arms the hook for the calling thread with `value` (non-null).
  void arm(void *value) {
    if (ready_)
      ::pthread_setspecific(key_, value);
  }

private:
  pthread_key_t key_{};
  bool ready_ = false;
};

/// Grows or shrinks a mapping, possibly moving it. nullptr on failure.
inline void *remap(void *p, std::size_t old_bytes, std::size_t new_bytes) {
  void *q = ::mremap(p, old_bytes, new_bytes, MREMAP_MAYMOVE);
  return q == MAP_FAILED ? nullptr : q;
}

/// Asks the OS to back the range with transparent huge pages where it can
/// (2 MiB on x86-64: one TLB entry for 512 pages). Advice only: where THP is
/// off, or `never`, nothing changes; the range must be 2 MiB-aligned to gain.
inline void adviseHuge(void *p, std::size_t bytes) {
#ifdef MADV_HUGEPAGE
  ::madvise(p, bytes, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

/// Asks the OS to back the range's resident pages with huge pages now
/// (Linux 6.1's MADV_COLLAPSE: synchronous, in the calling thread; the
/// range's 2 MiB blocks are filled in whole). False where the kernel
/// cannot (older kernels, THP `never`): then nothing changes.
inline bool collapseHuge(void *p, std::size_t bytes) {
#if defined(__linux__)
  constexpr int kMadvCollapse = 25; // MADV_COLLAPSE (Linux uapi; glibc 2.36 lacks it)
  return ::madvise(p, bytes, kMadvCollapse) == 0;
#else
  (void)p;
  (void)bytes;
  return false;
#endif
}

/// Asks the OS never to back the range with transparent huge pages, nor
/// to collapse it into one later (khugepaged); advice only, as adviseHuge.
inline void adviseNoHuge(void *p, std::size_t bytes) {
#ifdef MADV_NOHUGEPAGE
  ::madvise(p, bytes, MADV_NOHUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

/// A coarse monotonic clock in milliseconds (wrapping every 49 days: compare
/// differences), from the vDSO: no system call.
inline std::uint32_t now_ms() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return static_cast<std::uint32_t>(static_cast<std::uint64_t>(t.tv_sec) * 1000u +
                                    static_cast<std::uint64_t>(t.tv_nsec) / 1000000u);
}

/// Tells the OS the range's contents are no longer needed (pages read back
/// as zero).
inline void discard(void *p, std::size_t bytes) {
  ::madvise(p, bytes, MADV_DONTNEED);
}

inline void write_all(int fd, const char *s, std::size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, s, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

inline int open_for_writing(const char *path, bool append) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  return ::open(path, flags, 0644);
}

inline void close_fd(int fd) { ::close(fd); }

/// Prints "defero: <call>(<ptr>): <what>" on stderr and aborts. Used for
/// heap corruption the program cannot recover from (double free, foreign
/// pointer, overwritten canary). Never allocates.
[[noreturn]] inline void fatal_pointer(const char *call, const void *ptr,
                                       const char *what) {
  char line[256];
  int n = std::snprintf(line, sizeof line, "defero: %s(%p): %s\n", call, ptr,
                        what);
  if (n > 0)
    write_all(2, line, static_cast<std::size_t>(n) < sizeof line
                           ? static_cast<std::size_t>(n)
                           : sizeof line - 1);
  std::abort();
}

/// Prints "defero: <message>" on stderr and ends the process with status 2.
/// Used for configuration errors (a bad DEFERO_* value).
[[noreturn]] inline void fatal_config(const char *message) {
  char line[512];
  int n = std::snprintf(line, sizeof line, "defero: %s\n", message);
  if (n > 0)
    write_all(2, line, static_cast<std::size_t>(n) < sizeof line
                           ? static_cast<std::size_t>(n)
                           : sizeof line - 1);
  ::_exit(2);
}

} // namespace defero::os
