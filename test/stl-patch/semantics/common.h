// common.h - shared by the semantics test programs (containers.cpp,
// exceptions.cpp): the transcript printer, a stateful counting allocator,
// and a malloc-free reader of the Defero runtime's statistics.
//
// Everything printed to stdout must be the same whichever compiler, -O
// level and include path (patched or not) built the program, and whether
// or not libdefero is preloaded. The only exception is a line
//   defero-hints <name>: <count>
// which is 0 for the unpatched headers and > 0 for the patched ones (the
// driver, run_semantics.py, knows). Nothing here prints an address.
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>

// Defined by libdefero (DESIGN.md); weak, so the program runs without it.
extern "C" __attribute__((weak)) int defero_stats_json(FILE *out);

namespace sem {

inline long g_failures = 0; // checks that failed (the exit status says so)

// --- transcript --------------------------------------------------------------

inline int as_int(int v) { return v; } // element types add theirs (ADL)
inline void put(int v) { std::printf(" %d", v); }
template <class A, class B> void put(const std::pair<A, B> &p) {
  std::printf(" (%d,%d)", as_int(p.first), as_int(p.second));
}

template <class C, class = void> struct has_size : std::false_type {};
template <class C>
struct has_size<C, std::void_t<decltype(std::declval<const C &>().size())>>
    : std::true_type {};

// The printing helpers are not inlined: the programs are built a dozen
// times each, and every copy of them costs -O2 time.
#define SEM_NOINLINE __attribute__((noinline))

/// Prints "n=<count> <elements>" (and a mismatch if size() disagrees).
template <class C> SEM_NOINLINE void put_contents(const C &c) {
  std::size_t n = 0;
  for (auto i = c.begin(); i != c.end(); ++i)
    ++n;
  std::printf("n=%zu", n);
  if constexpr (has_size<C>::value)
    if (c.size() != n) {
      std::printf(" SIZE MISMATCH size()=%zu", c.size());
      ++g_failures;
    }
  if (n == 0)
    std::printf(" (empty)");
  for (const auto &x : c)
    put(x);
}

inline void check_pending(const char *where); // below

/// Prints one container line. Checks first (before anything else can
/// allocate) that no hint is left pending in the runtime.
template <class C> SEM_NOINLINE void show(const char *label, const C &c) {
  check_pending(label);
  std::printf("  %s: ", label);
  put_contents(c);
  std::printf("\n");
}

/// The same for unordered containers, with the bucket count.
template <class U> SEM_NOINLINE void show_u(const char *label, const U &u) {
  check_pending(label);
  std::printf("  %s: buckets=%zu ", label, u.bucket_count());
  put_contents(u);
  std::printf("\n");
}

inline void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
inline void note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fputs("  ", stdout);
  std::vfprintf(stdout, fmt, ap);
  std::fputc('\n', stdout);
  va_end(ap);
}

// --- the Defero runtime's statistics, read without allocating -------------------

struct Stats {
  unsigned long long allocs = 0, frees = 0, neighbor = 0, tree = 0,
                     container = 0, hinted = 0;
  unsigned long long hints() const { return neighbor + tree + container; }
};

inline char g_stats_buf[4096];
inline FILE *g_stats_file = nullptr;
inline long g_runtime_checks = 0; // statistics reads that were compared
inline const char *g_first_pending = nullptr;

inline bool runtime_present() { return defero_stats_json != nullptr; }

inline bool field(const char *key, unsigned long long &v) {
  const char *p = std::strstr(g_stats_buf, key);
  if (!p)
    return false;
  p += std::strlen(key);
  while (*p == ' ' || *p == ':')
    ++p;
  char *end = nullptr;
  v = std::strtoull(p, &end, 10);
  return end != p;
}

/// Reads the runtime's statistics into s. No malloc happens here once
/// stats_init() has run (it checks that), so a pending hint is not
/// consumed by the check itself.
inline bool read_stats(Stats &s) {
  if (!g_stats_file)
    return false;
  std::memset(g_stats_buf, 0, sizeof g_stats_buf);
  std::rewind(g_stats_file);
  if (defero_stats_json(g_stats_file) != 0)
    return false;
  g_stats_buf[sizeof g_stats_buf - 1] = 0;
  return field("\"allocs\"", s.allocs) && field("\"frees\"", s.frees) &&
         field("\"neighbor\"", s.neighbor) && field("\"tree\"", s.tree) &&
         field("\"container\"", s.container) &&
         field("\"hinted_allocs\"", s.hinted);
}

[[noreturn]] inline void die(const char *msg) {
  std::fprintf(stderr, "%s\n", msg);
  std::exit(3);
}

/// Opens the statistics stream (when the runtime is there) and checks that
/// reading the statistics does not allocate.
inline void stats_init() {
  if (!runtime_present())
    return;
  g_stats_file = fmemopen(g_stats_buf, sizeof g_stats_buf, "w");
  if (!g_stats_file)
    die("semantics: fmemopen failed");
  std::setvbuf(g_stats_file, nullptr, _IONBF, 0);
  Stats a, b, c;
  if (!read_stats(a) || !read_stats(b) || !read_stats(c))
    die("semantics: defero_stats_json gave no allocs/frees/hints/hinted_allocs");
  if (b.allocs != c.allocs || b.frees != c.frees)
    die("semantics: reading the statistics allocates; the pending-hint checks "
        "would not be sound");
}

/// Whether the runtime has a hint that no allocation has taken yet: every
/// hint is followed by exactly one (small, hence counted) node allocation,
/// so the hint counters equal hinted_allocs whenever no hint is pending.
inline bool hint_pending() {
  Stats s;
  if (!runtime_present())
    return false;
  if (!read_stats(s))
    die("semantics: defero_stats_json failed");
  ++g_runtime_checks;
  return s.hints() != s.hinted;
}

inline void check_pending(const char *where) {
  if (hint_pending() && !g_first_pending)
    g_first_pending = where;
}

/// Ends a section: one line, the same with and without the runtime (without
/// it no hint can be pending).
inline void section_end() {
  check_pending("end of section");
  if (g_first_pending) {
    std::printf("  PENDING LEAK (first seen at '%s')\n", g_first_pending);
    ++g_failures;
  } else {
    std::printf("  pending ok\n");
  }
  g_first_pending = nullptr;
}

inline void section(const char *name) { std::printf("== %s\n", name); }

// --- a stateful counting allocator --------------------------------------------
// Each allocator has an id (its state); blocks carry a header with the id
// and the count, so a block freed through an allocator that is not equal to
// the one that allocated it, or with another count, is reported.

constexpr int kIds = 64;
inline long g_live[kIds];       // live blocks per allocator id
inline long g_allocs[kIds];     // allocations per allocator id
inline long g_live_bytes = 0;   // all ids
inline long g_bad_frees = 0;    // id or count mismatch at deallocate

struct alignas(16) BlockHeader {
  int id;
  std::size_t n;
};

template <class T, bool CopyProp, bool MoveProp, bool SwapProp> struct CountingAlloc {
  using value_type = T;
  using propagate_on_container_copy_assignment = std::bool_constant<CopyProp>;
  using propagate_on_container_move_assignment = std::bool_constant<MoveProp>;
  using propagate_on_container_swap = std::bool_constant<SwapProp>;
  using is_always_equal = std::false_type;
  static_assert(alignof(T) <= 16, "the header keeps 16-byte alignment");

  template <class U> struct rebind {
    using other = CountingAlloc<U, CopyProp, MoveProp, SwapProp>;
  };

  int id = 1;

  CountingAlloc() noexcept = default;
  explicit CountingAlloc(int i) noexcept : id(i) {}
  template <class U>
  CountingAlloc(const CountingAlloc<U, CopyProp, MoveProp, SwapProp> &o) noexcept
      : id(o.id) {}

  T *allocate(std::size_t n) {
    auto *h = static_cast<BlockHeader *>(::operator new(sizeof(BlockHeader) + n * sizeof(T)));
    h->id = id;
    h->n = n;
    ++g_live[id];
    ++g_allocs[id];
    g_live_bytes += static_cast<long>(n * sizeof(T));
    return reinterpret_cast<T *>(h + 1);
  }
  void deallocate(T *p, std::size_t n) noexcept {
    BlockHeader *h = reinterpret_cast<BlockHeader *>(p) - 1;
    if (h->id != id || h->n != n)
      ++g_bad_frees;
    --g_live[h->id];
    g_live_bytes -= static_cast<long>(h->n * sizeof(T));
    ::operator delete(h);
  }
  /// A copied container gets its own allocator (id + 10).
  CountingAlloc select_on_container_copy_construction() const {
    return CountingAlloc(id + 10 < kIds ? id + 10 : id);
  }
  template <class U> bool operator==(const CountingAlloc<U, CopyProp, MoveProp, SwapProp> &o) const {
    return id == o.id;
  }
  template <class U> bool operator!=(const CountingAlloc<U, CopyProp, MoveProp, SwapProp> &o) const {
    return id != o.id;
  }
};

inline long counting_live_blocks() {
  long n = 0;
  for (long v : g_live)
    n += v;
  return n;
}

/// The common end of both programs; returns the exit status.
/// extra_live: other live blocks the program counts (0 when no leak).
inline int finish(const char *prog, long extra_live = 0) {
  const long blocks = counting_live_blocks();
  std::printf("== leaks\n  counting allocator: live blocks %ld, live bytes %ld, "
              "mismatched frees %ld\n  other live blocks: %ld\n",
              blocks, g_live_bytes, g_bad_frees, extra_live);
  const bool leak = blocks != 0 || g_live_bytes != 0 || g_bad_frees != 0 || extra_live != 0;
  std::printf("%s\n", leak ? "LEAK" : "no leaks");
  if (g_failures)
    std::printf("%ld FAILED CHECKS\n", g_failures);
  std::fflush(stdout);
  // For the driver: was the runtime consulted? (stderr, not the transcript.)
  std::fprintf(stderr, "%s: runtime %s, %ld statistics checks\n", prog,
               runtime_present() ? "present" : "absent", g_runtime_checks);
  return leak || g_failures ? 1 : 0;
}

} // namespace sem
