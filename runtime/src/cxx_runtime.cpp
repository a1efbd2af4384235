// cxx_runtime.cpp - see cxx_runtime.h.
#include "cxx_runtime.h"

#include <atomic>
#include <dlfcn.h>

#include "process_heap.h"

namespace defero {
namespace {

using NewHandler = void (*)();
using GetNewHandler = NewHandler (*)();
using ThrowBadAlloc = void (*)();

// Resolved at the first failure; a null result (no C++ runtime loaded, or
// one linked statically into the program) is resolved again next time.
template <class F> F resolve(std::atomic<F> &slot, const char *name) {
  F f = slot.load(std::memory_order_acquire);
  if (!f) {
    f = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
    slot.store(f, std::memory_order_release);
  }
  return f;
}

std::atomic<GetNewHandler> get_new_handler_fn{nullptr};
std::atomic<ThrowBadAlloc> throw_bad_alloc_fn{nullptr};

NewHandler currentNewHandler() {
  const GetNewHandler get = resolve(get_new_handler_fn, "_ZSt15get_new_handlerv");
  return get ? get() : nullptr;
}

[[noreturn]] void throwBadAlloc() {
  if (const ThrowBadAlloc t = resolve(throw_bad_alloc_fn, "_ZSt17__throw_bad_allocv"))
    t();
  os::fatal_pointer("operator new", nullptr,
                    "out of memory, and no C++ runtime loaded to throw std::bad_alloc");
}

} // namespace

void *newSlow(std::size_t size, std::size_t align, bool nothrow) {
  for (;;) {
    void *p = align ? processHeap().mallocAligned(size, align)
                    : processHeap().malloc(size);
    if (p)
      return p;
    const NewHandler handler = currentNewHandler();
    if (!handler) {
      if (nothrow)
        return nullptr;
      throwBadAlloc();
    }
    handler();
  }
}

} // namespace defero
