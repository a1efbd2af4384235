// cxx_runtime.h - operator new's out-of-memory loop, and the two pieces of
// the C++ runtime it needs (std::get_new_handler, throwing std::bad_alloc),
// found at run time so that libdefero.so links against libc alone, as
// mimalloc's and jemalloc's libraries do. A C program that preloads the
// library never loads libstdc++; a C++ program has it loaded already.
//
// Cost: nothing on the fast path. The loop runs only once the heap has
// failed an allocation; the first failure resolves both symbols by dlsym.
#pragma once

#include <cstddef>

namespace defero {

/// `operator new`'s loop after the fast path failed: allocate (with the
/// pending hint, or aligned when `align` is not 0), call the new-handler
/// while one is set, then throw std::bad_alloc, or return nullptr when
/// `nothrow`. A new-handler that throws from a nothrow new propagates (the
/// library is built without exceptions, as mimalloc is in that mode).
void *newSlow(std::size_t size, std::size_t align, bool nothrow);

} // namespace defero
