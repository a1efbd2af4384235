// stats.cpp - the statistics JSON (DESIGN.md's keys): every heap's owner
// counters summed when read, the live bytes and their peak, written at exit
// to stderr or DEFERO_STATS_FILE. Formats into a caller's buffer with
// snprintf: never allocates.
#include <cstdio>
#include <unistd.h>

#include "process_heap.h"

namespace defero {

std::size_t ProcessHeap::formatStats(char *buf, std::size_t cap) {
  if constexpr (kRealtimeBuild) {
    if (rt_)
      return formatRealtimeStats(buf, cap);
  }
  noteFootprint();
  unsigned long long allocs = 0, frees = 0, hints[3] = {}, hinted = 0, same = 0,
                     own = 0;
  long long released = 0;
  // Live bytes now, exactly (every heap's counts, read without stopping
  // them), and the peak it may be.
  std::int64_t live = g_live.live.load(std::memory_order_relaxed);
  {
    std::lock_guard<SpinLock> guard(heaps_lock_);
    for (LocalHeap *h = heaps_; h; h = h->next_heap) {
      // The word caches' unhanded slots are counted as taken: not yet.
      // Blocks freed onto a free stack stay counted as taken: a push is a
      // free, a pop an allocation.
      allocs += h->smallAllocs() - h->cachedSlots() + h->stackPops() +
                h->count.large_allocs.get();
      frees += h->smallFrees() + h->stackPushes() + h->count.large_frees.get();
      live += h->smallLiveBytes(kCanaryBytes) - h->cachedBytes(kCanaryBytes) -
              h->stackedBytes(kCanaryBytes) - h->livePublished();
      for (int k = 0; k < 3; ++k)
        hints[k] += h->hintsOf(static_cast<unsigned>(k));
      hinted += h->hintedAllocs();
      same += h->hintSameClass();
      own += h->count.policy_allocs.get();
      released += h->releasedBytes();
    }
  }
  g_live.raise(live);
  const std::int64_t peak = g_live.peak.load(std::memory_order_relaxed);
  int n = std::snprintf(
      buf, cap,
      "{\"allocs\": %llu, \"frees\": %llu, \"peak_live_bytes\": %lld, "
      "\"peak_footprint_bytes\": %llu, "
      "\"hints\": {\"neighbor\": %llu, \"tree\": %llu, \"container\": %llu}, "
      "\"hinted_allocs\": %llu, \"hint_same_class\": %llu, "
      "\"policy\": \"%s\", \"k\": %u, \"backend\": \"%s\", "
      "\"live_bytes\": %lld, \"large_mapped_bytes\": %llu, "
      "\"container_policies\": %llu, \"policy_allocs\": %llu, "
      "\"released_bytes\": %lld, \"resident_bytes\": %lld, "
      "\"checked\": %s}\n",
      allocs, frees, static_cast<long long>(peak > live ? peak : live),
      static_cast<unsigned long long>(peak_footprint_.load()), hints[0],
      hints[1], hints[2], hinted, same, predicateName(cfg_.policy), cfg_.k,
      cfg_.backend, static_cast<long long>(live),
      static_cast<unsigned long long>(large_.mappedBytes()),
      static_cast<unsigned long long>(registry_.policies()), own,
      released + static_cast<long long>(large_.releasedBytes()),
      static_cast<long long>(PageArena::get().usedBytes() + large_.mappedBytes()) +
          static_cast<long long>(pages::g_mid_top.load(std::memory_order_relaxed)) - released,
      kCanaryBytes ? "true" : "false");
  if (n < 0)
    return 0;
  return static_cast<std::size_t>(n) < cap ? static_cast<std::size_t>(n) : cap - 1;
}

void ProcessHeap::atExit() {
  trace_.flush();
  if (!cfg_.stats_stderr && !cfg_.stats_file)
    return;
  // A forked child that exits (without exec) reports nothing: the stats
  // describe the program, whose process writes them when it exits.
  if (::getpid() != pid_)
    return;
  char buf[1024];
  const std::size_t n = formatStats(buf, sizeof buf);
  if (!cfg_.stats_file) { // DEFERO_STATS_FILE replaces stderr
    os::write_all(2, buf, n);
    return;
  }
  int fd = os::open_for_writing(cfg_.stats_file, false);
  if (fd < 0) {
    const char msg[] = "defero: DEFERO_STATS_FILE: cannot open at exit\n";
    os::write_all(2, msg, sizeof msg - 1);
    return;
  }
  os::write_all(fd, buf, n);
  os::close_fd(fd);
}

} // namespace defero
