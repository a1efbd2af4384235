// hw_buddy.h - HardwareBuddy<Model>: the engine of BuddyHeap (buddy_heap.h)
// whose every decision is made by a Verilated RTL allocator from hw/ (RBS
// or OBS, built with HOST_RAM=1), driven cycle by cycle through its
// ready/valid handshake (hw/sim/buddy_sim.h). The model's header RAM is a
// sparse host mapping (hw/sim/host_ram.h); its block offsets become
// addresses of BuddyHeap's arena. Every operation's cycles, counted in the
// RTL, go into CycleStats.
//
// Timing model: after each operation the engine lets the model finish its
// background work (OBS's splitting after a Fast-Return, its Block time)
// before returning, so the next request finds it ready; that Block time is
// reported apart (block_cycles), since a program that asks again sooner
// would wait for it.
//
// Needs hw/ (Defero::hw_models): only real-time builds use it. The model
// allocates through operator new once, at init.
#pragma once

#include <cstdint>
#include <optional>

#include "buddy_sim.h"
#include "defero/buddy/buddy_core.h"
#include "host_ram.h"

namespace defero::buddy {

/// min / total / max of one kind of operation's cycles.
struct CycleStat {
  std::uint64_t n = 0, sum = 0, min = 0, max = 0;
  void add(std::uint64_t v) {
    min = n == 0 || v < min ? v : min;
    max = v > max ? v : max;
    sum += v;
    ++n;
  }
  double mean() const { return n ? static_cast<double>(sum) / static_cast<double>(n) : 0.0; }
};

struct CycleStats {
  CycleStat alloc;   // request to response, allocations that got a block
  CycleStat find;    // cycles finding the list (every allocation request)
  CycleStat free;    // request to response, valid frees
  CycleStat block;   // background cycles after a response (OBS's Block time)
  std::uint64_t out_of_memory = 0, invalid_frees = 0;
  std::uint64_t cycles = 0; // every cycle the model ran, reset included
};

template <class Model, unsigned MaxHeapLog, unsigned MinLog = 4> class HardwareBuddy {
public:
  static constexpr std::uint64_t kMinBlock = std::uint64_t{1} << MinLog;
  static constexpr std::uint64_t kMaxHeapBytes = std::uint64_t{1} << MaxHeapLog;

  HardwareBuddy() = default;
  HardwareBuddy(const HardwareBuddy &) = delete;
  HardwareBuddy &operator=(const HardwareBuddy &) = delete;

  void attach(char *) {} // blocks are offsets; the RTL never touches them
  /// Starts the model over a heap of heap_bytes (a power of two, from the
  /// smallest block up to the size the model was Verilated for).
  bool init(std::uint64_t heap_bytes) {
    if (sim_ || !isPow2(heap_bytes) || heap_bytes < kMinBlock || heap_bytes > kMaxHeapBytes)
      return false;
    const unsigned heap_log = log2Exact(heap_bytes);
    if (!ram_.reset(std::uint64_t{4} << (heap_log - MinLog)))
      return false;
    sim_.emplace(heap_log, &ram_);
    heap_ = heap_bytes;
    free_ = heap_bytes;
    return true;
  }

  std::int64_t alloc(std::uint64_t bytes) {
    const hw::OpResult r = sim_->alloc(bytes);
    stats_.find.add(r.find);
    finish(); // (OBS writes the block's header after answering)
    if (r.status != hw::Status::Ok) {
      ++stats_.out_of_memory;
      return -1;
    }
    stats_.alloc.add(r.wait + r.latency);
    free_ -= blockSize(r.addr);
    return static_cast<std::int64_t>(r.addr);
  }

  bool free(std::uint64_t offset) {
    const std::uint64_t size = blockSize(offset);
    const hw::OpResult r = sim_->free(offset);
    const bool ok = r.status == hw::Status::Ok;
    if (ok) {
      stats_.free.add(r.wait + r.latency);
      free_ += size;
    } else {
      ++stats_.invalid_frees;
    }
    finish();
    return ok;
  }

  /// The allocated block's size, read from its header word in the model's
  /// RAM (tag: bit 6 busy, bits 5..0 level); 0 if no block starts there.
  std::uint64_t blockSize(std::uint64_t offset) const {
    if (offset >= heap_ || (offset & (kMinBlock - 1)))
      return 0;
    const std::uint32_t tag = ram_words()[(offset >> MinLog) * 4];
    return (tag & 0x40u) ? kMinBlock << (tag & 0x3fu) : 0;
  }
  std::uint64_t freeBytes() const { return free_; }
  const CycleStats &stats() const { return stats_; }

private:
  const std::uint32_t *ram_words() const { return const_cast<hw::HostRam &>(ram_).data(); }
  void finish() {
    const std::uint64_t b = sim_->settle();
    if (b)
      stats_.block.add(b);
    stats_.cycles = sim_->cycles();
  }

  hw::HostRam ram_;
  std::optional<hw::BuddySim<Model>> sim_;
  std::uint64_t heap_ = 0, free_ = 0;
  CycleStats stats_;
};

} // namespace defero::buddy
