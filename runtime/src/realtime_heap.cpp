// realtime_heap.cpp - the real-time builds' heap: the buddy backends behind
// one lock, with exact counts (everything happens under the lock anyway).
#include "realtime_heap.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>

#include "Vbuddy_obs_rt.h"
#include "Vbuddy_rbs_rt.h"
#include "defero/buddy/buddy_heap.h"
#include "defero/buddy/hw_buddy.h"
#include "defero/platform/os.h"

namespace defero {

thread_local bool tls_in_realtime __attribute__((tls_model("initial-exec"))) = false;

namespace {
/// Marks the calling thread as inside the real-time heap for a scope.
struct InRealtime {
  bool was = tls_in_realtime;
  InRealtime() { tls_in_realtime = true; }
  ~InRealtime() { tls_in_realtime = was; }
};
} // namespace

struct RealtimeHeap::Backend {
  virtual ~Backend() = default;
  virtual bool init(std::uint64_t heap_bytes) = 0;
  virtual char *base() = 0;
  virtual void *malloc(std::size_t sz) = 0;
  virtual void *mallocAligned(std::size_t sz, std::size_t align) = 0;
  virtual bool tryFree(void *p) = 0;
  virtual std::size_t getSize(const void *p) = 0;
  /// The RTL's cycle counts; nullptr for the software engine.
  virtual const buddy::CycleStats *cycles() = 0;
};

namespace {

template <class Engine> struct BackendOf final : RealtimeHeap::Backend {
  bool init(std::uint64_t heap_bytes) override { return heap.init(heap_bytes); }
  char *base() override { return heap.base(); }
  void *malloc(std::size_t sz) override { return heap.malloc(sz); }
  void *mallocAligned(std::size_t sz, std::size_t align) override {
    return heap.mallocAligned(sz, align);
  }
  bool tryFree(void *p) override { return heap.tryFree(p); }
  std::size_t getSize(const void *p) override { return heap.getSize(p); }
  const buddy::CycleStats *cycles() override {
    if constexpr (requires { heap.engine().stats(); })
      return &heap.engine().stats();
    else
      return nullptr;
  }
  buddy::BuddyHeap<Engine> heap;
};

using SwBackend = BackendOf<buddy::SoftwareBuddy>;
using ObsBackend = BackendOf<buddy::HardwareBuddy<Vbuddy_obs_rt, DEFERO_MAX_HEAP_LOG>>;
using RbsBackend = BackendOf<buddy::HardwareBuddy<Vbuddy_rbs_rt, DEFERO_MAX_HEAP_LOG>>;

template <class T> constexpr std::size_t kMax(std::size_t a) { return sizeof(T) > a ? sizeof(T) : a; }
constexpr std::size_t kBackendBytes = kMax<SwBackend>(kMax<ObsBackend>(sizeof(RbsBackend)));
alignas(64) unsigned char backend_storage[kBackendBytes];
alignas(RealtimeHeap) unsigned char heap_storage[sizeof(RealtimeHeap)];

const char *const kInvalidFree =
    "not an allocated block of the real-time buddy heap (already freed, or "
    "not the start of a block): invalid free";

} // namespace

RealtimeHeap *RealtimeHeap::start(const Config &cfg) {
  InRealtime in;
  Backend *b = nullptr;
  switch (cfg.backend_kind) {
  case Config::Backend::HwObs:
    b = new (backend_storage) ObsBackend;
    break;
  case Config::Backend::HwRbs:
    b = new (backend_storage) RbsBackend;
    break;
  case Config::Backend::SwBuddy:
    b = new (backend_storage) SwBackend;
    break;
  case Config::Backend::Kbit:
    return nullptr;
  }
  if (!b->init(cfg.heap_bytes)) {
    char msg[200];
    std::snprintf(msg, sizeof msg,
                  "DEFERO_BACKEND=%s: cannot map a buddy heap of %llu bytes "
                  "(DEFERO_HEAP_BYTES); try a smaller one",
                  cfg.backend, cfg.heap_bytes);
    os::fatal_config(msg);
  }
  auto *h = new (heap_storage) RealtimeHeap;
  h->backend_ = b;
  h->base_ = b->base();
  h->bytes_ = cfg.heap_bytes;
  h->name_ = cfg.backend;
  return h;
}

void RealtimeHeap::noteAlloc(std::size_t block) {
  ++allocs_;
  live_ += block;
  if (live_ > peak_live_)
    peak_live_ = live_;
}

void *RealtimeHeap::malloc(std::size_t sz) {
  InRealtime in;
  void *p;
  {
    std::lock_guard<TicketLock> g(lock_);
    p = backend_->malloc(sz);
    if (p) {
      const std::size_t block = backend_->getSize(p);
      noteAlloc(block);
      const unsigned long long end =
          static_cast<unsigned long long>(static_cast<char *>(p) - base_) + block;
      if (end > peak_used_)
        peak_used_ = end;
    } else {
      ++oom_;
    }
  }
  if (!p)
    errno = ENOMEM;
  return p;
}

void *RealtimeHeap::mallocAligned(std::size_t sz, std::size_t align) {
  if (align > bytes_) {
    errno = ENOMEM;
    return nullptr;
  }
  return malloc(sz > align ? sz : align); // blocks are aligned to their size
}

void RealtimeHeap::free(void *p, const char *call) {
  InRealtime in;
  bool ok;
  {
    std::lock_guard<TicketLock> g(lock_);
    const std::size_t block = backend_->getSize(p);
    ok = backend_->tryFree(p);
    if (ok) {
      ++frees_;
      live_ -= block;
    }
  }
  if (!ok)
    invalid(call, p);
}

std::size_t RealtimeHeap::usableSize(const void *p) {
  std::lock_guard<TicketLock> g(lock_);
  return backend_->getSize(p);
}

void RealtimeHeap::invalid(const char *call, const void *p) {
  os::fatal_pointer(call, p, kInvalidFree);
}

RealtimeHeap::Counts RealtimeHeap::counts() {
  std::lock_guard<TicketLock> g(lock_);
  return {allocs_, frees_, peak_live_, live_, peak_used_, oom_};
}

std::size_t RealtimeHeap::formatHw(char *buf, std::size_t cap) {
  buddy::CycleStats c;
  bool hw;
  {
    std::lock_guard<TicketLock> g(lock_);
    const buddy::CycleStats *s = backend_->cycles();
    hw = s != nullptr;
    if (hw)
      c = *s;
  }
  int n;
  if (!hw) {
    n = std::snprintf(buf, cap, "\"heap_bytes\": %llu, \"out_of_memory\": %llu, \"hw\": null",
                      static_cast<unsigned long long>(bytes_), counts().out_of_memory);
  } else {
    auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
    n = std::snprintf(
        buf, cap,
        "\"heap_bytes\": %llu, \"out_of_memory\": %llu, "
        "\"hw\": {\"alloc_cycles_max\": %llu, \"alloc_cycles_mean\": %.3f, "
        "\"find_cycles_max\": %llu, \"free_cycles_max\": %llu, "
        "\"alloc_cycles_min\": %llu, \"find_cycles_min\": %llu, "
        "\"find_cycles_mean\": %.3f, \"free_cycles_min\": %llu, "
        "\"free_cycles_mean\": %.3f, \"block_cycles_max\": %llu, "
        "\"allocs\": %llu, \"frees\": %llu, \"cycles\": %llu, "
        "\"model\": \"%s\", \"ram_latency\": 1}",
        u(bytes_), u(c.out_of_memory), u(c.alloc.max), c.alloc.mean(), u(c.find.max),
        u(c.free.max), u(c.alloc.min), u(c.find.min), c.find.mean(), u(c.free.min),
        c.free.mean(), u(c.block.max), u(c.alloc.n), u(c.free.n), u(c.cycles),
        std::strcmp(name_, "hw-rbs") == 0 ? "RBS" : "OBS");
  }
  if (n < 0 || static_cast<std::size_t>(n) >= cap)
    return 0;
  return static_cast<std::size_t>(n);
}

} // namespace defero
