// realtime_heap.h - the heap of a real-time build (-DDEFERO_BACKEND=hw-obs,
// hw-rbs or sw-buddy): one buddy heap for the whole process, whose policy
// is executed by the Verilated RTL (OBS or RBS, cycle by cycle) or by the
// software model, behind one lock.
//
//   TicketLock (FIFO) ->  BuddyHeap<HardwareBuddy<Vbuddy_obs_rt>>
//                            BuddyHeap<HardwareBuddy<Vbuddy_rbs_rt>>
//                            BuddyHeap<SoftwareBuddy>
//
// The Verilated model allocates (its construction, Verilator's context):
// those allocations, and any made while this heap is busy on the same
// thread (tls_in_realtime), go to the process heap's K-Bit heap, which
// serves as the bootstrap heap; frees find their heap by address.
#pragma once

#include <cstddef>
#include <cstdint>

#include "config.h"
#include "defero/heaplayers/threads/ticket_lock.h"

namespace defero {

/// Set while this thread is inside the real-time heap (or starting it):
/// its allocations then go to the bootstrap heap.
extern thread_local bool tls_in_realtime __attribute__((tls_model("initial-exec")));

class RealtimeHeap {
public:
  /// The backend cfg names over cfg.heap_bytes, in static storage. A heap
  /// that cannot start ends the process with a one-line error (exit 2).
  static RealtimeHeap *start(const Config &cfg);

  bool owns(const void *p) const {
    return static_cast<const char *>(p) >= base_ &&
           static_cast<const char *>(p) < base_ + bytes_;
  }
  /// nullptr (errno ENOMEM) when the buddy heap has no block for sz.
  void *malloc(std::size_t sz);
  void *mallocAligned(std::size_t sz, std::size_t align);
  /// p must be the start of an allocated block, else a one-line error
  /// naming `call` and the process aborts (double or invalid free).
  void free(void *p, const char *call);
  /// The block's size, 0 if p does not start an allocated block.
  std::size_t usableSize(const void *p);
  /// Reports p as an invalid free of `call` in one line, and aborts.
  [[noreturn]] void invalid(const char *call, const void *p);

  const char *base() const { return base_; }
  std::uint64_t heapBytes() const { return bytes_; }

  /// Appends this heap's statistics to the stats JSON object being built
  /// in buf: `"heap_bytes": .., "hw": {..}` and the counts the process
  /// heap asks for. Returns the length written (0 if it did not fit).
  struct Counts {
    unsigned long long allocs, frees, peak_live, live, peak_used, out_of_memory;
  };
  Counts counts();
  std::size_t formatHw(char *buf, std::size_t cap);

  void lock() { lock_.lock(); }
  void unlock() { lock_.unlock(); }
  void unlockInChild() { lock_.resetInChild(); }

  struct Backend; // the engine behind the lock (realtime_heap.cpp)

private:
  RealtimeHeap() = default;
  void noteAlloc(std::size_t block);

  alignas(64) TicketLock lock_;
  Backend *backend_ = nullptr;
  const char *base_ = nullptr;
  std::uint64_t bytes_ = 0;
  const char *name_ = "";
  unsigned long long allocs_ = 0, frees_ = 0, live_ = 0, peak_live_ = 0,
                     peak_used_ = 0, oom_ = 0;
};

} // namespace defero
