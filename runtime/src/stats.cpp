// stats.cpp - the statistics JSON (DESIGN.md's keys): every heap's owner
// counters summed when read, the live bytes and their peak, written at exit
// to stderr or DEFERO_STATS_FILE. One writer (writeStats) for every build:
// a real-time build's JSON (realtime_route.cpp) has the same keys, its
// buddy heap's values, then its own keys. Formats into a caller's buffer
// with snprintf: never allocates.
//
// Cost: nothing on an allocation (the counters are the heaps' own plain
// adds); a read walks every heap under the heap list's lock, O(heaps x
// size classes).
#include <cstdio>
#include <unistd.h>

#include "process_heap.h"

namespace defero {

ProcessHeap::HeapSums ProcessHeap::sumHeaps() {
  HeapSums s{};
  std::lock_guard<SpinLock> guard(heaps_lock_);
  for (const LocalHeap *h = heaps_; h; h = h->next_heap) {
    // The word caches' unhanded slots are counted as taken: not yet.
    // Blocks freed onto a free stack stay counted as taken: a push is a
    // free, a pop an allocation.
    s.small_allocs += h->smallAllocs() - h->cachedSlots() + h->stackPops();
    s.large_allocs += h->count.large_allocs.get();
    s.frees += h->smallFrees() + h->stackPushes() + h->count.large_frees.get();
    s.live += h->smallLiveBytes(kCanaryBytes) - h->cachedBytes(kCanaryBytes) -
              h->stackedBytes(kCanaryBytes) - h->livePublished();
    for (int k = 0; k < 3; ++k)
      s.hints[k] += h->hintsOf(static_cast<unsigned>(k));
    s.hinted += h->hintedAllocs();
    s.same += h->hintSameClass();
    s.policy_allocs += h->count.policy_allocs.get();
    s.released += h->releasedBytes();
  }
  return s;
}

ProcessHeap::StatsKeys ProcessHeap::statsKeys(const HeapSums &s) {
  StatsKeys keys{};
  for (int k = 0; k < 3; ++k)
    keys.hints[k] = s.hints[k];
  keys.hinted_allocs = s.hinted;
  keys.hint_same_class = s.same;
  keys.policy = predicateName(cfg_.policy);
  keys.k = cfg_.k;
  keys.backend = cfg_.backend;
  keys.container_policies = static_cast<unsigned long long>(registry_.policies());
  keys.policy_allocs = s.policy_allocs;
  keys.checked = kCanaryBytes != 0;
  return keys;
}

std::size_t ProcessHeap::writeStats(const StatsKeys &keys, const char *extra, char *buf,
                                    std::size_t cap) {
  if (cap == 0)
    return 0;
  const int n = std::snprintf(
      buf, cap,
      "{\"allocs\": %llu, \"frees\": %llu, \"peak_live_bytes\": %lld, "
      "\"peak_footprint_bytes\": %llu, "
      "\"hints\": {\"neighbor\": %llu, \"tree\": %llu, \"container\": %llu}, "
      "\"hinted_allocs\": %llu, \"hint_same_class\": %llu, "
      "\"policy\": \"%s\", \"k\": %u, \"backend\": \"%s\", "
      "\"live_bytes\": %lld, \"large_mapped_bytes\": %llu, "
      "\"container_policies\": %llu, \"policy_allocs\": %llu, "
      "\"released_bytes\": %lld, \"resident_bytes\": %lld, "
      "\"checked\": %s%s%s}\n",
      keys.allocs, keys.frees, keys.peak_live_bytes, keys.peak_footprint_bytes, keys.hints[0],
      keys.hints[1], keys.hints[2], keys.hinted_allocs, keys.hint_same_class, keys.policy,
      keys.k, keys.backend, keys.live_bytes, keys.large_mapped_bytes, keys.container_policies,
      keys.policy_allocs, keys.released_bytes, keys.resident_bytes,
      keys.checked ? "true" : "false", extra ? ", " : "", extra ? extra : "");
  if (n < 0)
    return 0;
  return static_cast<std::size_t>(n) < cap ? static_cast<std::size_t>(n) : cap - 1;
}

std::size_t ProcessHeap::formatStats(char *buf, std::size_t cap) {
  if constexpr (kRealtimeBuild) {
    if (rt_)
      return formatRealtimeStats(buf, cap);
  }
  noteFootprint();
  // Live bytes now, exactly (every heap's counts, read without stopping
  // them), and the peak it may be.
  std::int64_t live = g_live.live.load(std::memory_order_relaxed);
  const HeapSums s = sumHeaps();
  live += s.live;
  g_live.raise(live);
  const std::int64_t peak = g_live.peak.load(std::memory_order_relaxed);
  StatsKeys keys = statsKeys(s);
  keys.allocs = s.small_allocs + s.large_allocs;
  keys.frees = s.frees;
  keys.peak_live_bytes = static_cast<long long>(peak > live ? peak : live);
  keys.peak_footprint_bytes = static_cast<unsigned long long>(peak_footprint_.load());
  keys.live_bytes = static_cast<long long>(live);
  keys.large_mapped_bytes = static_cast<unsigned long long>(large_.mappedBytes());
  keys.released_bytes = s.released + static_cast<long long>(large_.releasedBytes());
  keys.resident_bytes =
      static_cast<long long>(PageArena::get().usedBytes() + large_.mappedBytes()) +
      static_cast<long long>(pages::g_mid_top.load(std::memory_order_relaxed)) - s.released;
  return writeStats(keys, nullptr, buf, cap);
}

void ProcessHeap::atExit() {
  trace_.flush();
  if (!cfg_.stats_stderr && !cfg_.stats_file)
    return;
  // A forked child that exits (without exec) reports nothing: the stats
  // describe the program, whose process writes them when it exits.
  if (::getpid() != pid_)
    return;
  char buf[2048]; // (a real-time build's JSON, with its hw keys, is near 1 KiB)
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
