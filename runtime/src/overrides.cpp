// overrides.cpp - the only place the malloc family and operator new/delete
// are replaced. Compiled into libdefero.so only (never into defero_core, so
// benchmarks and tests can hold the Defero heap and the system allocator
// side by side in one process).
//
// Cost: each entry is process_heap.h's inline fast path compiled in place
// (malloc about 17 instructions from a free stack, 22 from a word cache;
// free about 32), no stack frame, no lock, no atomic read-modify-write
// (test: runtime.fast_paths_no_atomic_rmw_*); anything else is a tail call
// to the full path.
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "cxx_runtime.h"
#include "process_heap.h"

using defero::processHeap;

#define DEFERO_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

bool isPowerOfTwo(std::size_t a) { return a != 0 && (a & (a - 1)) == 0; }

constexpr std::size_t kPage = 4096;

} // namespace

// malloc and free try the inline fast path first: it needs no process heap
// object, only the calling thread's (see process_heap.h).
DEFERO_EXPORT void *malloc(std::size_t size) {
  return defero::mallocFastOr(size, defero::mallocFull);
}

DEFERO_EXPORT void free(void *p) {
  defero::freeFastOr(p, "free", defero::freeFull);
}

DEFERO_EXPORT void *calloc(std::size_t n, std::size_t size) {
  return processHeap().calloc(n, size);
}

DEFERO_EXPORT void *realloc(void *p, std::size_t size) {
  return processHeap().realloc(p, size, "realloc");
}

DEFERO_EXPORT void *reallocarray(void *p, std::size_t n, std::size_t size) {
  std::size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return nullptr;
  }
  return processHeap().realloc(p, total, "reallocarray");
}

DEFERO_EXPORT int posix_memalign(void **out, std::size_t align, std::size_t size) {
  if (!isPowerOfTwo(align) || align % sizeof(void *) != 0)
    return EINVAL;
  const int saved = errno;
  void *p = processHeap().mallocAligned(size, align);
  errno = saved; // posix_memalign reports through its result only
  if (!p)
    return ENOMEM;
  *out = p;
  return 0;
}

DEFERO_EXPORT void *aligned_alloc(std::size_t align, std::size_t size) {
  if (!isPowerOfTwo(align)) {
    errno = EINVAL;
    return nullptr;
  }
  return processHeap().mallocAligned(size, align);
}

// glibc's memalign accepts any alignment and rounds it up to a power of
// two; only one that cannot be rounded up is EINVAL.
DEFERO_EXPORT void *memalign(std::size_t align, std::size_t size) {
  if (align > SIZE_MAX / 2 + 1) {
    errno = EINVAL;
    return nullptr;
  }
  std::size_t a = 1;
  while (a < align)
    a <<= 1;
  return processHeap().mallocAligned(size, a);
}

DEFERO_EXPORT void *valloc(std::size_t size) {
  return processHeap().mallocAligned(size, kPage);
}

DEFERO_EXPORT void *pvalloc(std::size_t size) {
  if (size > SIZE_MAX - kPage) {
    errno = ENOMEM;
    return nullptr;
  }
  return processHeap().mallocAligned((size + kPage - 1) & ~(kPage - 1), kPage);
}

DEFERO_EXPORT std::size_t malloc_usable_size(void *p) {
  return processHeap().usableSize(p);
}

// --- operator new / delete ---------------------------------------------------

namespace {

// The fast path, else the hinted fast path and the slow path (mallocFull),
// else the new-handler loop.
void *newOrThrow(std::size_t size, std::size_t align) {
  if (!align)
    if (void *p = defero::mallocFastOr(size, defero::mallocFull))
      return p;
  return defero::newSlow(size, align, false);
}

// operator new(size) and new[](size): malloc's fast path with its misses
// tail-called to functions that never return null (no stack frame and no
// null test on a hit: 23 instructions, as malloc's).
__attribute__((noinline)) void *newMiss(std::size_t size) {
  if (void *p = defero::mallocFull(size))
    return p;
  return defero::newSlow(size, 0, false);
}
__attribute__((noinline)) void *newRefill(defero::pages::LocalHeap *h, unsigned cls,
                                          std::size_t size) {
  if (void *p = defero::mallocRefill(h, cls, size))
    return p;
  return defero::newSlow(size, 0, false);
}
DEFERO_ALWAYS_INLINE void *newFast(std::size_t size) {
  return defero::mallocFastOr(size, newMiss, newRefill);
}
// operator new(size), one object: the same, but a one-shot hint pending
// (the fast path closed: noFastHeap) takes mallocFullNode, whose node may
// take a node class (kbit::nodeClassOf: the same slots as the fused
// entry's, so the stl-patch headers and the plugin place alike).
__attribute__((noinline)) void *newObjectRefill(defero::pages::LocalHeap *h, unsigned cls,
                                                std::size_t size) {
  void *p = h == defero::noFastHeap() ? defero::mallocFullNode(size)
                                      : defero::mallocRefill(h, cls, size);
  if (p)
    return p;
  return defero::newSlow(size, 0, false);
}
DEFERO_ALWAYS_INLINE void *newObjectFast(std::size_t size) {
  return defero::mallocFastOr(size, newMiss, newObjectRefill);
}

void *newNoThrow(std::size_t size, std::size_t align) noexcept {
  if (!align)
    if (void *p = defero::mallocFastOr(size, defero::mallocFull))
      return p;
  return defero::newSlow(size, align, true);
}

// Inlined into every operator delete (a jump fewer per call).
DEFERO_ALWAYS_INLINE void deleteIt(void *p) noexcept {
  defero::freeFastOr(p, "operator delete", defero::freeFull);
}

} // namespace

#define DEFERO_NEW __attribute__((visibility("default")))

DEFERO_NEW void *operator new(std::size_t n) { return newObjectFast(n); }
DEFERO_NEW void *operator new[](std::size_t n) { return newFast(n); }
DEFERO_NEW void *operator new(std::size_t n, const std::nothrow_t &) noexcept {
  return newNoThrow(n, 0);
}
DEFERO_NEW void *operator new[](std::size_t n, const std::nothrow_t &) noexcept {
  return newNoThrow(n, 0);
}
DEFERO_NEW void *operator new(std::size_t n, std::align_val_t a) {
  return newOrThrow(n, static_cast<std::size_t>(a));
}
DEFERO_NEW void *operator new[](std::size_t n, std::align_val_t a) {
  return newOrThrow(n, static_cast<std::size_t>(a));
}
DEFERO_NEW void *operator new(std::size_t n, std::align_val_t a,
                              const std::nothrow_t &) noexcept {
  return newNoThrow(n, static_cast<std::size_t>(a));
}
DEFERO_NEW void *operator new[](std::size_t n, std::align_val_t a,
                                const std::nothrow_t &) noexcept {
  return newNoThrow(n, static_cast<std::size_t>(a));
}

DEFERO_NEW void operator delete(void *p) noexcept { deleteIt(p); }
DEFERO_NEW void operator delete[](void *p) noexcept { deleteIt(p); }
DEFERO_NEW void operator delete(void *p, std::size_t) noexcept { deleteIt(p); }
DEFERO_NEW void operator delete[](void *p, std::size_t) noexcept { deleteIt(p); }
DEFERO_NEW void operator delete(void *p, std::align_val_t) noexcept { deleteIt(p); }
DEFERO_NEW void operator delete[](void *p, std::align_val_t) noexcept { deleteIt(p); }
DEFERO_NEW void operator delete(void *p, std::size_t, std::align_val_t) noexcept {
  deleteIt(p);
}
DEFERO_NEW void operator delete[](void *p, std::size_t, std::align_val_t) noexcept {
  deleteIt(p);
}
DEFERO_NEW void operator delete(void *p, const std::nothrow_t &) noexcept {
  deleteIt(p);
}
DEFERO_NEW void operator delete[](void *p, const std::nothrow_t &) noexcept {
  deleteIt(p);
}
DEFERO_NEW void operator delete(void *p, std::align_val_t,
                                const std::nothrow_t &) noexcept {
  deleteIt(p);
}
DEFERO_NEW void operator delete[](void *p, std::align_val_t,
                                  const std::nothrow_t &) noexcept {
  deleteIt(p);
}
