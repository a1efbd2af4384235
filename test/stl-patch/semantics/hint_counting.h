// hint_counting.h - an allocator over defero::allocator that counts the
// hints the patched headers give it through allocate(n, hint).
#pragma once

#include <cstddef>
#include <cstdio>
#include <utility>

#include <defero/allocator.h>

namespace sem {

inline long g_dallocs = 0;      // node/bucket allocations
inline long g_dlive = 0;        // live blocks
inline long g_dhints = 0;       // allocate(n, hint) calls with a non-null hint
inline long g_dhint_calls = 0;  // allocate(n, hint) calls (any hint)

template <class T>
struct HintCounting : defero::allocator<T, defero::KBit<20>, defero::Best> {
  using Base = defero::allocator<T, defero::KBit<20>, defero::Best>;
  using value_type = T;
  using defero_hint_tag = void; // the patched headers pass hints to us
  template <class U> struct rebind {
    using other = HintCounting<U>;
  };

  HintCounting() noexcept = default;
  template <class U> HintCounting(const HintCounting<U> &) noexcept {}

  T *allocate(std::size_t n) {
    T *p = Base::allocate(n, nullptr);
    ++g_dallocs;
    ++g_dlive;
    return p;
  }
  T *allocate(std::size_t n, const void *hint) {
    ++g_dhint_calls;
    if (hint)
      ++g_dhints;
    T *p = Base::allocate(n, hint);
    ++g_dallocs;
    ++g_dlive;
    return p;
  }
  void deallocate(T *p, std::size_t n) noexcept {
    --g_dlive;
    Base::deallocate(p, n);
  }
  template <class U> bool operator==(const HintCounting<U> &) const { return true; }
  template <class U> bool operator!=(const HintCounting<U> &) const { return false; }
};

/// The special line: 0 unpatched, > 0 patched (run_semantics.py compares it
/// only among the patched builds).
inline void print_defero_hints(const char *name, long hints) {
  std::printf("defero-hints %s: %ld\n", name, hints);
}

} // namespace sem
