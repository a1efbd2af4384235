// counters.h - what every heap of the process shares: the owner-written
// counters, the live bytes and their peak, and the memory-return settings
// (DEFERO_DECAY_MS, DEFERO_MAX_RESIDENT) with the bytes given back.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "defero/pages/page_arena.h"

namespace defero::pages {

/// A counter written only by its heap's owner: an add is one instruction
/// with no lock prefix (a plain add to memory on x86-64: an aligned 8-byte
/// store is atomic there, so a reader sees the old value or the new one);
/// any thread may read it.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DEFERO_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define DEFERO_TSAN 1
#endif

class OwnerCounter {
public:
  void add(std::uint64_t n) {
#if defined(__x86_64__) && !defined(DEFERO_TSAN)
    asm("addq %1, %0" : "+m"(v_) : "er"(n));
#else
    __atomic_store_n(&v_, __atomic_load_n(&v_, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
#endif
  }
  std::uint64_t get() const { return __atomic_load_n(&v_, __ATOMIC_RELAXED); }
  /// Subtracts 1 unless the counter is 0 (then false, and the counter is
  /// 0 again). The owner only: at 0 it reads all ones for an instant, which
  /// a reader on another thread may see (WordCacheLayer::depth reads such
  /// a free stack's room as empty). A subtract in memory and a branch on
  /// its borrow on x86-64 (a compare first was one instruction more on
  /// every free onto a stack).
  __attribute__((always_inline)) bool takeOne() {
#if defined(__x86_64__) && !defined(DEFERO_TSAN)
    bool borrow;
    asm("subq $1, %0" : "+m"(v_), "=@ccc"(borrow));
    if (__builtin_expect(borrow, 0)) {
      add(1);
      return false;
    }
    return true;
#else
    if (get() == 0)
      return false;
    add(~std::uint64_t{0});
    return true;
#endif
  }
  /// Sets the counter (its owner, with no other writer).
  void set(std::uint64_t n) { __atomic_store_n(&v_, n, __ATOMIC_RELAXED); }

private:
  std::uint64_t v_ = 0; // written by the asm (or __atomic_store_n), read atomically
};

/// The process's live bytes as the heaps publish them, and the peak. A heap
/// publishes once its word caches have claimed, and its hints placed
/// straight from bitmaps, 256 KiB since it last did
/// (WordCacheLayer::kPublishBytes: a streak of continuations counts when it
/// ends, so it may add one span), or its mid heap's region 256 KiB (net of
/// the blocks it freed straight back to the region), when its thread
/// exits, and when statistics are read. So the peak misses at most, per
/// thread: 256 KiB, one span (a streak: at most 256 KiB), 256 KiB of the
/// mid region, the blocks it took back from its free stacks (a stack holds
/// at most 64 KiB, one per size class) and from its mid heap's cache (at
/// most 256 KiB) since it last published.
struct LiveTotals {
  std::atomic<std::int64_t> live{0}, peak{0};
  std::size_t canary = 0; ///< bytes of each slot that are not the block's

  /// Adds delta (which may be negative) and raises the peak.
  void add(std::int64_t delta) {
    if (delta == 0)
      return;
    const std::int64_t now = live.fetch_add(delta, std::memory_order_relaxed) + delta;
    raise(now);
  }
  void raise(std::int64_t now) {
    std::int64_t p = peak.load(std::memory_order_relaxed);
    while (now > p && !peak.compare_exchange_weak(p, now, std::memory_order_relaxed))
      ;
  }
};

/// How long an Empty span keeps its memory before it goes back to the OS,
/// in milliseconds (DEFERO_DECAY_MS; 0: at once; ~0u: never). Set once,
/// before the first heap exists.
inline std::uint32_t g_decay_ms = 100;
/// The footprint ceiling (DEFERO_MAX_RESIDENT): while the small-object
/// heap holds more than this many bytes of spans (PageArena::usedBytes
/// less g_released), empty spans' memory goes back at once. ~0: none.
inline std::uint64_t g_max_resident = ~std::uint64_t{0};
/// Bytes of spans whose memory is back with the OS, every heap's (changed
/// on the slow paths only).
inline std::atomic<std::int64_t> g_released{0};
/// When the large heap's oldest resident free run is due to go back to
/// the OS (ms, os::now_ms's clock; ~0: none is), and what gives it back:
/// the small heaps' decay, which runs on their slow paths, calls it when
/// due, so the large blocks' memory goes back while a program makes only
/// small allocations (LargeHeap sets both).
inline std::atomic<std::uint32_t> g_large_due{~std::uint32_t{0}};
inline void (*g_large_decay)() = nullptr;
/// Whether the small-object heap holds more than the ceiling.
inline bool overCeiling() {
  if (__builtin_expect(g_max_resident == ~std::uint64_t{0}, 1))
    return false;
  const std::int64_t held = static_cast<std::int64_t>(PageArena::get().usedBytes()) -
                            g_released.load(std::memory_order_relaxed);
  return held > static_cast<std::int64_t>(g_max_resident);
}

} // namespace defero::pages
