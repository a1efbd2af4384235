// bad_input - feeds libdefero (linked, not preloaded) one kind of misuse per
// run, named by argv[1]. Recoverable misuse prints "ok: ..." and exits 0
// when the answer is the documented one (NULL + errno, EINVAL, bad_alloc);
// corrupting misuse must be stopped by the runtime with a one-line report
// and SIGABRT, so reaching the end of those cases is a failure (exit 3).
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <new>
#include <string>
#include <thread>

#include "defero/defero.h"

namespace {

int expectNullErrno(void *p, int want, const char *what) {
  if (p != nullptr || errno != want) {
    std::printf("FAIL: %s returned %p errno %d (want NULL, %d)\n", what, p,
                errno, want);
    return 1;
  }
  std::printf("ok: %s -> NULL, errno %s\n", what,
              want == ENOMEM ? "ENOMEM" : "EINVAL");
  return 0;
}

volatile std::size_t huge = SIZE_MAX; // keeps the compiler from folding

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: bad_input CASE\n");
    return 2;
  }
  const std::string c = argv[1];
  errno = 0;
  if (c == "double-free") {
    void *volatile p = std::malloc(24);
    std::free(p);
    std::free(p);
  } else if (c == "double-free-reclaimed") {
    // The second free comes after the block left the thread's free stack
    // (it overflowed: its oldest blocks went back to their span's bitmap):
    // reported when the second copy goes back to the span too, before it
    // can be handed out twice.
    static void *blocks[4000];
    for (auto &b : blocks)
      b = std::malloc(48);
    void *volatile p = blocks[0];
    std::free(p);
    for (int i = 1; i < 2000; ++i)
      std::free(blocks[i]);
    std::free(p);
    for (int i = 2000; i < 4000; ++i)
      std::free(blocks[i]);
  } else if (c == "cross-thread-double-free") {
    // The owner's first free stacks the block; another thread's second
    // free (which sends blocks home without looking at them) sees the
    // stack's mark: reported at once. (The thread starts first: a start
    // that grew the owner's heap between the two frees could send the
    // idle class's stack back to its span, WordCacheLayer::retireIdle.)
    std::atomic<void *> freed{nullptr};
    std::thread other([&] {
      void *q;
      while (!(q = freed.load()))
        std::this_thread::yield();
      std::free(q);
    });
    void *p = std::malloc(24);
    std::free(p);
    freed.store(p);
    other.join();
  } else if (c == "cross-thread-double-free-home") {
    // Another thread frees the block twice: both copies go home in its
    // outbox; reported when the owner collects them (its next refill),
    // before the block can be handed out twice.
    static void *blocks[2000];
    for (auto &b : blocks)
      b = std::malloc(24);
    void *volatile p = blocks[0];
    std::thread([&] {
      std::free(p);
      std::free(p);
    }).join();
    for (int i = 1; i < 2000; ++i)
      std::free(blocks[i]);
    for (int i = 0; i < 4000; ++i)
      blocks[i % 2000] = std::malloc(24);
  } else if (c == "double-delete") {
    int *volatile p = new int(5);
    delete p;
    delete p;
  } else if (c == "foreign-free") {
    int local = 0;
    std::free(&local);
  } else if (c == "interior-free") {
    char *volatile p = static_cast<char *>(std::malloc(64));
    std::free(p + 16);
  } else if (c == "large-double-free") {
    void *volatile p = std::malloc(1 << 20);
    std::free(p);
    std::free(p);
  } else if (c == "thread-cached-double-free") {
    // 64 KiB: a large block small enough for the thread's own cache, where
    // it waits after the first free; the second is still reported.
    void *volatile p = std::malloc(64 << 10);
    std::free(p);
    std::free(p);
  } else if (c == "freed-realloc") {
    void *volatile p = std::malloc(40);
    std::free(p);
    void *q = std::realloc(p, 400);
    std::printf("realloc returned %p\n", q);
  } else if (c == "foreign-realloc") {
    static char not_heap[64];
    void *q = std::realloc(not_heap, 128);
    std::printf("realloc returned %p\n", q);
  } else if (c == "malloc-max") {
    return expectNullErrno(std::malloc(huge), ENOMEM, "malloc(SIZE_MAX)");
  } else if (c == "calloc-overflow") {
    return expectNullErrno(std::calloc(huge / 2, 3), ENOMEM,
                           "calloc(SIZE_MAX/2, 3)");
  } else if (c == "realloc-max") {
    void *p = std::malloc(10);
    std::memset(p, 'x', 10);
    int r = expectNullErrno(std::realloc(p, huge), ENOMEM, "realloc(p, SIZE_MAX)");
    if (static_cast<char *>(p)[9] != 'x')
      r = 1; // the block must survive a failed realloc
    std::free(p);
    return r;
  } else if (c == "reallocarray-overflow") {
    return expectNullErrno(reallocarray(nullptr, huge / 4, 8), ENOMEM,
                           "reallocarray(NULL, SIZE_MAX/4, 8)");
  } else if (c == "new-max") {
    try {
      void *p = ::operator new(huge);
      std::printf("FAIL: operator new(SIZE_MAX) returned %p\n", p);
      return 1;
    } catch (const std::bad_alloc &) {
      std::printf("ok: operator new(SIZE_MAX) threw std::bad_alloc\n");
      return 0;
    }
  } else if (c == "new-nothrow-max") {
    void *p = ::operator new(huge, std::nothrow);
    std::printf(p ? "FAIL: got %p\n" : "ok: nothrow new(SIZE_MAX) -> %p\n", p);
    return p ? 1 : 0;
  } else if (c == "posix-memalign-bad") {
    void *p = nullptr;
    int r1 = posix_memalign(&p, 24, 100);          // not a power of two
    int r2 = posix_memalign(&p, sizeof(void *) / 2, 100); // below void*
    if (r1 != EINVAL || r2 != EINVAL) {
      std::printf("FAIL: posix_memalign gave %d, %d\n", r1, r2);
      return 1;
    }
    std::printf("ok: posix_memalign(24) and (4) -> EINVAL\n");
    return 0;
  } else if (c == "aligned-alloc-bad") {
    return expectNullErrno(aligned_alloc(48, 96), EINVAL, "aligned_alloc(48, 96)");
  } else if (c == "memalign-bad") {
    // glibc rounds any alignment up to a power of two; only one that cannot
    // be rounded up is invalid.
    void *q = memalign(3, 10);
    if (!q || reinterpret_cast<std::uintptr_t>(q) % 4) {
      std::printf("FAIL: memalign(3, 10) gave %p\n", q);
      return 1;
    }
    std::free(q);
    return expectNullErrno(memalign(huge, 10), EINVAL, "memalign(SIZE_MAX, 10)");
  } else if (c == "aligned-ok") {
    // The good cases next to the bad ones: every alignment honoured.
    for (std::size_t a = 16; a <= (1u << 20); a *= 2) {
      void *p = aligned_alloc(a, 3 * a / 2);
      void *q = nullptr;
      if (!p || reinterpret_cast<std::uintptr_t>(p) % a ||
          posix_memalign(&q, a, 40) || reinterpret_cast<std::uintptr_t>(q) % a) {
        std::printf("FAIL: alignment %zu\n", a);
        return 1;
      }
      std::free(p);
      std::free(q);
    }
    void *v = valloc(10), *pv = pvalloc(5000);
    if (reinterpret_cast<std::uintptr_t>(v) % 4096 ||
        reinterpret_cast<std::uintptr_t>(pv) % 4096 ||
        malloc_usable_size(pv) < 8192) {
      std::printf("FAIL: valloc/pvalloc\n");
      return 1;
    }
    std::free(v);
    std::free(pv);
    std::printf("ok: alignments 16..1M, valloc, pvalloc\n");
    return 0;
  } else {
    std::fprintf(stderr, "bad_input: unknown case '%s'\n", c.c_str());
    return 2;
  }
  std::printf("FAIL: misuse '%s' was not stopped\n", c.c_str());
  return 3;
}
