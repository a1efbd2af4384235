// process_heap.cpp - the process heap: routing, hints, policies, statistics.
#include "process_heap.h"

#include <cerrno>
#include <cstring>
#include <new>
#include <pthread.h>
#include <unistd.h>

#include "defero/platform/os.h"

namespace defero {

thread_local PendingHint tls_hint __attribute__((tls_model("initial-exec"))) = {};

namespace {

#ifndef DEFERO_CHECKED
#define DEFERO_CHECKED 0
#endif
// Checked builds (libdefero-checked.so) end every small block with an
// 8-byte canary in its chunk's last bytes, checked when the block is freed
// or reallocated: a write past the block that reaches the chunk's end is
// reported instead of silently corrupting the neighbour.
constexpr std::size_t kCanaryBytes = DEFERO_CHECKED ? 8 : 0;
constexpr std::uint64_t kCanary = 0xCA4A'27CA'4A27'CA4Aull;
// Requests up to this size are small (chunk includes the canary).
constexpr std::size_t kMaxSmall = kbit::kMaxSmallBytes - kCanaryBytes;

void armCanary(void *p, std::size_t chunk) {
  if constexpr (kCanaryBytes != 0)
    std::memcpy(static_cast<char *>(p) + chunk - kCanaryBytes, &kCanary,
                kCanaryBytes);
}

void checkCanary(void *p, std::size_t chunk, const char *call) {
  if constexpr (kCanaryBytes != 0) {
    std::uint64_t v;
    std::memcpy(&v, static_cast<char *>(p) + chunk - kCanaryBytes, sizeof v);
    if (v != kCanary)
      os::fatal_pointer(call, p,
                        "heap overflow: the canary after the block was overwritten");
  }
}
// Outside the small-object window a block's history is not kept, so a
// double free and a foreign pointer look alike there.
constexpr const char *kNotLive =
    "not a live block of this heap (never allocated here, or already freed)";

// libstdc++'s _Rb_tree_node_base: color, parent, left, right.
struct RbNode {
  int color;
  RbNode *parent, *left, *right;
};

} // namespace

ProcessHeap::ProcessHeap(const Config &cfg) : cfg_(cfg), pid_(::getpid()) {
  live_hook_.init(&ProcessHeap::threadExit);
  for (unsigned i = 0; i < Small::kHeaps; ++i)
    small_.heap(i).setK(cfg_.k);
  trace_.open(cfg_.trace_fd);
}

// --- allocation -----------------------------------------------------------

void *ProcessHeap::malloc(std::size_t sz) {
#if DEFERO_REALTIME
  if (realtime())
    return realtimeMalloc(sz);
#endif
  return mallocFresh(sz, nullptr);
}

void *ProcessHeap::mallocFresh(std::size_t sz, bool *fresh) {
  PendingHint h = tls_hint;
  if (h.kind)
    tls_hint.kind = kHintNone; // one-shot, whatever happens next
  if (sz > kMaxSmall)
    return mallocLarge(sz, os::kPageBytes, fresh);
  const std::size_t want = sz + kCanaryBytes;
  void *p = h.kind ? hinted(want, h) : small_.current().malloc(want);
  if (__builtin_expect(!p, 0)) // the small-object window is full
    return mallocLarge(sz, os::kPageBytes, fresh);
  const std::size_t chunk = kbit::kClassBytes[kbit::classOf(want)];
  armCanary(p, chunk);
  if (fresh)
    *fresh = false;
  noteAlloc(p, chunk - kCanaryBytes, sz);
  return p;
}

void *ProcessHeap::mallocLarge(std::size_t sz, std::size_t align, bool *fresh) {
  void *p = large_.mallocAligned(sz, align, fresh);
  if (!p) {
    errno = ENOMEM;
    return nullptr;
  }
  counters().large_allocs.fetch_add(1, std::memory_order_relaxed);
  noteFootprint();
  noteAlloc(p, large_.getSize(p), sz);
  return p;
}

namespace {
thread_local unsigned counter_slot __attribute__((tls_model("initial-exec"))) = 0;
thread_local std::int64_t pending_live __attribute__((tls_model("initial-exec"))) = 0;
thread_local bool live_hook_armed __attribute__((tls_model("initial-exec"))) = false;
constexpr std::int64_t kLiveBatch = 64 * 1024;
} // namespace

/// Publishes a thread's pending live bytes when it exits, so bytes a thread
/// allocated and handed to others are not lost with it.
void ProcessHeap::threadExit(void *heap) {
  auto *self = static_cast<ProcessHeap *>(heap);
  if (pending_live != 0) {
    self->live_.fetch_add(pending_live, std::memory_order_relaxed);
    pending_live = 0;
  }
}

void ProcessHeap::armLiveHook() {
  live_hook_armed = true;
  live_hook_.arm(this);
}

ProcessHeap::SlotCounters &ProcessHeap::counters() {
  if (counter_slot == 0)
    counter_slot = 1 + next_slot_.fetch_add(1, std::memory_order_relaxed) % kCounterSlots;
  return slots_[counter_slot - 1];
}

/// Adds to this thread's pending live bytes; publishes them (and raises the
/// peak) once they move by kLiveBatch, so a malloc/free pair costs no
/// shared-cache-line write.
void ProcessHeap::addLive(std::int64_t bytes) {
  if (__builtin_expect(!live_hook_armed, 0))
    armLiveHook();
  pending_live += bytes;
  if (pending_live < kLiveBatch && pending_live > -kLiveBatch)
    return;
  const std::int64_t live =
      live_.fetch_add(pending_live, std::memory_order_relaxed) + pending_live;
  pending_live = 0;
  std::int64_t peak = peak_live_.load(std::memory_order_relaxed);
  while (live > peak && !peak_live_.compare_exchange_weak(
                            peak, live, std::memory_order_relaxed))
    ;
}

void ProcessHeap::noteAlloc(void *p, std::size_t usable, std::size_t requested) {
  addLive(static_cast<std::int64_t>(usable));
  if (trace_.enabled())
    trace_.onMalloc(p, requested);
}

/// The small heap that owns p, or nullptr: one metadata load and a table
/// lookup (filled the first time each heap id is seen).
ProcessHeap::Kbit *ProcessHeap::smallOwner(const void *p) {
  const std::uint8_t id = small_.heap(0).ownerId(p);
  if (id == 0)
    return nullptr;
  Kbit *h = by_id_[id].load(std::memory_order_acquire);
  if (!h) {
    h = small_.ownerOf(p);
    by_id_[id].store(h, std::memory_order_release);
  }
  return h;
}

/// The heap that owns anchor (so a hinted node lands beside its
/// neighbour), else the calling thread's heap.
ProcessHeap::Kbit &ProcessHeap::heapFor(const void *anchor) {
  Kbit *o = anchor ? smallOwner(anchor) : nullptr;
  return o ? *o : small_.current();
}

void ProcessHeap::noteFootprint() {
  const std::uint64_t fp = Arena::arena().usedBytes() + large_.mappedBytes();
  std::uint64_t peak = peak_footprint_.load(std::memory_order_relaxed);
  while (fp > peak && !peak_footprint_.compare_exchange_weak(
                          peak, fp, std::memory_order_relaxed))
    ;
}

void *ProcessHeap::mallocAligned(std::size_t sz, std::size_t align) {
  if (align <= kMinAlignment)
    return malloc(sz);
  tls_hint.kind = kHintNone;
#if DEFERO_REALTIME
  if (realtime()) {
    void *p = rt_->mallocAligned(sz, align);
    if (p && trace_.enabled())
      trace_.onMalloc(p, sz);
    return p;
  }
#endif
  const unsigned cls = align <= kMaxSmall && sz <= kMaxSmall
                           ? kbit::alignedClassOf(sz + kCanaryBytes, align)
                           : kbit::kNumClasses;
  if (cls == kbit::kNumClasses)
    return mallocLarge(sz, align, nullptr);
  void *p = small_.current().withLock([&](auto &h) {
    return h.allocateClass(cls, Predicate::First, nullptr, 0, 0);
  });
  if (!p) // the small-object window is full
    return mallocLarge(sz, align, nullptr);
  armCanary(p, kbit::kClassBytes[cls]);
  noteAlloc(p, kbit::kClassBytes[cls] - kCanaryBytes, sz);
  return p;
}

void *ProcessHeap::calloc(std::size_t n, std::size_t sz) {
  std::size_t total;
  if (__builtin_mul_overflow(n, sz, &total)) {
    tls_hint.kind = kHintNone;
    errno = ENOMEM;
    return nullptr;
  }
  bool fresh = false;
#if DEFERO_REALTIME
  if (realtime()) {
    void *p = realtimeMalloc(total);
    if (p)
      std::memset(p, 0, total); // a block may have been used before
    return p;
  }
#endif
  void *p = mallocFresh(total, &fresh);
  if (p && !fresh) // fresh mappings are zero already: do not touch them
    std::memset(p, 0, total);
  return p;
}

void ProcessHeap::free(void *p, const char *call) {
  if (!p)
    return;
  // Logged before the block goes back: once it is back another thread may
  // get it and log its malloc, which must come after this free.
  if (trace_.enabled())
    trace_.onFree(p);
#if DEFERO_REALTIME
  if (rt_ && rt_->owns(p)) {
    rt_->free(p, call);
    return;
  }
#endif
  if (Kbit *owner = smallOwner(p)) {
    const std::size_t chunk = owner->withLock([&](auto &h) {
      if (kCanaryBytes && h.isLive(p))
        checkCanary(p, h.sizeOf(p), call);
      return h.release(p, call);
    });
    addLive(-static_cast<std::int64_t>(chunk - kCanaryBytes));
  } else {
    const std::size_t bytes = large_.getSize(p);
    if (bytes == 0)
      os::fatal_pointer(call, p, kNotLive);
    noteFootprint(); // the peak may be now, just before this block goes
    if (!large_.tryFree(p))
      os::fatal_pointer(call, p, kNotLive);
    counters().large_frees.fetch_add(1, std::memory_order_relaxed);
    addLive(-static_cast<std::int64_t>(bytes));
  }
}

void *ProcessHeap::realloc(void *p, std::size_t sz, const char *call) {
  if (!p)
    return malloc(sz);
  tls_hint.kind = kHintNone; // a container's node is never realloc'ed
#if DEFERO_REALTIME
  if (rt_ && rt_->owns(p)) {
    const std::size_t old = rt_->usableSize(p);
    if (old == 0)
      rt_->invalid(call, p);
    if (sz == 0) { // glibc's behaviour: free and return NULL
      free(p, call);
      return nullptr;
    }
    // Keep the block while the new size still needs a block of its size.
    if (sz <= old && (sz > old / 2 || old <= kMinAlignment)) {
      if (trace_.enabled())
        trace_.onRealloc(p, p, sz);
      return p;
    }
    void *q = rt_->malloc(sz);
    if (!q)
      return nullptr; // p untouched, errno ENOMEM
    std::memcpy(q, p, old < sz ? old : sz);
    if (trace_.enabled()) // before p goes back (another thread may get it)
      trace_.onRealloc(p, q, sz);
    rt_->free(p, call);
    return q;
  }
#endif
  if (sz == 0) { // glibc's behaviour: free and return NULL
    free(p, call);
    return nullptr;
  }
  std::size_t old;
  if (Kbit *owner = smallOwner(p)) {
    old = owner->withLock([&](auto &h) {
      if (!h.isLive(p))
        os::fatal_pointer(call, p, "pointer is not a live block of this heap");
      checkCanary(p, h.sizeOf(p), call);
      return h.getSize(p) - kCanaryBytes;
    });
    // Keep the block if the new size still belongs to its class or one
    // below it (shrinking by less than half is not worth a copy).
    if (sz <= old && (sz > old / 2 || old == kbit::kClassBytes[0])) {
      if (trace_.enabled())
        trace_.onRealloc(p, p, sz);
      return p;
    }
  } else {
    old = large_.getSize(p);
    if (old == 0)
      os::fatal_pointer(call, p, kNotLive);
    // (A traced run moves by copy: mremap would free p's pages before the
    // trace could say so, and another thread could log them first.)
    if (sz > kMaxSmall && !trace_.enabled()) {
      noteFootprint();
      void *q = large_.remap(p, sz);
      if (!q) {
        errno = ENOMEM;
        return nullptr;
      }
      const std::size_t now = large_.getSize(q);
      addLive(static_cast<std::int64_t>(now) - static_cast<std::int64_t>(old));
      noteFootprint();
      if (trace_.enabled())
        trace_.onRealloc(p, q, sz);
      return q;
    }
  }
  void *q = malloc(sz);
  if (!q)
    return nullptr; // p untouched, errno = ENOMEM
  std::memcpy(q, p, old < sz ? old : sz);
  free(p, call);
  return q;
}

std::size_t ProcessHeap::usableSize(const void *p) {
  if (!p)
    return 0;
#if DEFERO_REALTIME
  if (rt_ && rt_->owns(p))
    return rt_->usableSize(p);
#endif
  if (Kbit *owner = smallOwner(p)) {
    const std::size_t chunk = owner->getSize(p);
    return chunk ? chunk - kCanaryBytes : 0;
  }
  return large_.getSize(p);
}

void *ProcessHeap::allocNear(std::size_t sz, const void *hint) {
  tls_hint.kind = kHintNone;
#if DEFERO_REALTIME
  if (realtime()) // the buddy policy has no placement to steer
    return realtimeMalloc(sz);
#endif
  if (sz > kMaxSmall)
    return malloc(sz);
  void *p = heapFor(hint).mallocNear(sz + kCanaryBytes, hint);
  return finishSmall(p, sz);
}

void *ProcessHeap::allocPath(std::size_t sz, std::uint64_t bits,
                             unsigned depth) {
  tls_hint.kind = kHintNone;
#if DEFERO_REALTIME
  if (realtime())
    return realtimeMalloc(sz);
#endif
  if (sz > kMaxSmall)
    return malloc(sz);
  void *p = small_.current().mallocPath(sz + kCanaryBytes, bits,
                                        depth > 64 ? 64 : depth);
  return finishSmall(p, sz);
}

/// Bookkeeping of a small block of sz requested bytes (p may be null).
void *ProcessHeap::finishSmall(void *p, std::size_t sz) {
  if (!p) {
    errno = ENOMEM;
    return nullptr;
  }
  const std::size_t chunk = kbit::kClassBytes[kbit::classOf(sz + kCanaryBytes)];
  armCanary(p, chunk);
  noteAlloc(p, chunk - kCanaryBytes, sz);
  return p;
}

long long ProcessHeap::classOf(const void *p) {
  auto &h = small_.heap(0);
  if (!h.inWindow(p))
    return -1;
  return static_cast<long long>(h.classKey(p));
}

// --- hints ------------------------------------------------------------------

/// Serves a small request that carries a hint, under the container's policy.
void *ProcessHeap::hinted(std::size_t sz, const PendingHint &h) {
  Predicate pred = cfg_.policy;
  const void *anchor = h.where;
  ContainerRegistry::Entry e;
  const bool known = registry_.lookup(h.container, e);
  const bool own_policy = known && e.policy >= 0;
  if (own_policy)
    pred = static_cast<Predicate>(e.policy);
  if (h.kind == kHintContainer)
    anchor = known ? e.last_node : nullptr;

  void *p = nullptr;
  std::uint64_t bits = 0;
  unsigned depth = 0;
  const bool want_path = h.kind == kHintTree &&
                         (pred == Predicate::Path || pred == Predicate::Auto);
  if (pred == Predicate::First || (pred != Predicate::Path && !anchor && !want_path)) {
    p = heapFor(anchor).malloc(sz);
  } else if (want_path && pathBits(h.where, h.side, bits, depth)) {
    p = heapFor(anchor).mallocPath(sz, bits, depth);
  } else {
    p = heapFor(anchor).mallocNear(sz, anchor);
  }
  if (!p)
    return nullptr;
  SlotCounters &sc = counters();
  sc.hinted_allocs.fetch_add(1, std::memory_order_relaxed);
  if (own_policy)
    sc.policy_allocs.fetch_add(1, std::memory_order_relaxed);
  // "Same class" at the container's own K if it set one (placement itself
  // uses the heap's K: a coarser K is already honoured by the nearest-class
  // search, a finer one cannot be, since chunks are filed at the heap's K).
  auto &k0 = small_.heap(0);
  const unsigned k = known && e.k ? e.k : cfg_.k;
  if (anchor && k0.inWindow(anchor) &&
      ((reinterpret_cast<std::uintptr_t>(anchor) - k0.base()) >> (32 - k)) ==
          ((reinterpret_cast<std::uintptr_t>(p) - k0.base()) >> (32 - k)))
    sc.hint_same_class.fetch_add(1, std::memory_order_relaxed);
  registry_.setLast(h.container, p, h.kind == kHintContainer);
  return p;
}

/// Direction bits from the root of a libstdc++ red-black tree down to
/// `parent`, plus the final side. Reads only nodes that are chunks of this
/// heap (so a wrong hint cannot make it read unmapped memory); stops at the
/// root, whose parent is the tree's header (header->parent == root).
bool ProcessHeap::pathBits(const void *parent, int insert_left,
                           std::uint64_t &bits, unsigned &depth) {
  auto readable = [&](const void *n) {
    return small_.heap(0).readableBytes(n) >= sizeof(RbNode) &&
           (reinterpret_cast<std::uintptr_t>(n) % alignof(RbNode)) == 0;
  };
  std::uint64_t up = 0;
  unsigned n = 0;
  auto *x = static_cast<const RbNode *>(parent);
  if (x && readable(x)) {
    while (n < 62) {
      const RbNode *p = x->parent;
      if (!p || !readable(p) || p->parent == x)
        break; // x is the root (p is the header, or outside the heap)
      up |= std::uint64_t{p->right == x} << n;
      ++n;
      x = p;
    }
  } else if (x) {
    return false;
  }
  bits = (up << 1) | (insert_left ? 0u : 1u);
  depth = n + 1;
  return true;
}

void ProcessHeap::hintNeighbor(const void *c, const void *n) {
  counters().hints[0].fetch_add(1, std::memory_order_relaxed);
  tls_hint = PendingHint{kHintNeighbor, 0, c, n};
}
void ProcessHeap::hintTree(const void *c, const void *parent, int insert_left) {
  counters().hints[1].fetch_add(1, std::memory_order_relaxed);
  tls_hint = PendingHint{kHintTree, static_cast<std::int8_t>(insert_left != 0),
                         c, parent};
}
void ProcessHeap::hintContainer(const void *c) {
  counters().hints[2].fetch_add(1, std::memory_order_relaxed);
  tls_hint = PendingHint{kHintContainer, 0, c, nullptr};
}

void ProcessHeap::containerPolicy(const void *c, const char *predicate, int k) {
  Predicate p;
  char msg[300];
  if (!parsePredicate(predicate, p)) {
    std::snprintf(msg, sizeof msg,
                  "defero: __defero_container_policy: predicate '%.80s' is not "
                  "valid (accepted: %s); container %p keeps the default\n",
                  predicate ? predicate : "(null)", kPredicateNames, c);
    os::write_all(2, msg, std::strlen(msg));
    return;
  }
  if (k < 0 || k > 32) {
    std::snprintf(msg, sizeof msg,
                  "defero: __defero_container_policy: k=%d is not valid "
                  "(accepted: 0 for the default, 1..32); container %p keeps "
                  "the default\n",
                  k, c);
    os::write_all(2, msg, std::strlen(msg));
    return;
  }
  registry_.setPolicy(c, p, static_cast<unsigned>(k));
}

// --- statistics -----------------------------------------------------------

std::size_t ProcessHeap::formatStats(char *buf, std::size_t cap) {
#if DEFERO_REALTIME
  if (rt_)
    return formatRealtimeStats(buf, cap);
#endif
  noteFootprint();
  unsigned long long allocs = 0, frees = 0, hints[3] = {}, hinted = 0,
                     same = 0, own = 0;
  for (unsigned i = 0; i < Small::kHeaps; ++i)
    small_.heap(i).withLock([&](auto &h) {
      allocs += h.allocCount();
      frees += h.freeCount();
    });
  for (const SlotCounters &c : slots_) {
    auto ld = [](const std::atomic<std::uint64_t> &a) {
      return static_cast<unsigned long long>(a.load(std::memory_order_relaxed));
    };
    allocs += ld(c.large_allocs);
    frees += ld(c.large_frees);
    for (int k = 0; k < 3; ++k)
      hints[k] += ld(c.hints[k]);
    hinted += ld(c.hinted_allocs);
    same += ld(c.hint_same_class);
    own += ld(c.policy_allocs);
  }
  // This thread's unpublished live bytes count too (others' are within
  // kLiveBatch each).
  const std::int64_t live = live_.load(std::memory_order_relaxed) + pending_live;
  std::int64_t peak = peak_live_.load(std::memory_order_relaxed);
  while (live > peak && !peak_live_.compare_exchange_weak(
                            peak, live, std::memory_order_relaxed))
    ;
  if (live > peak)
    peak = live; // the exchange succeeded: live is the new peak
  int n = std::snprintf(
      buf, cap,
      "{\"allocs\": %llu, \"frees\": %llu, \"peak_live_bytes\": %lld, "
      "\"peak_footprint_bytes\": %llu, "
      "\"hints\": {\"neighbor\": %llu, \"tree\": %llu, \"container\": %llu}, "
      "\"hinted_allocs\": %llu, \"hint_same_class\": %llu, "
      "\"policy\": \"%s\", \"k\": %u, \"backend\": \"%s\", "
      "\"live_bytes\": %lld, \"large_mapped_bytes\": %llu, "
      "\"container_policies\": %llu, \"policy_allocs\": %llu, "
      "\"checked\": %s}\n",
      allocs, frees, static_cast<long long>(peak),
      static_cast<unsigned long long>(peak_footprint_.load()), hints[0],
      hints[1], hints[2], hinted, same, predicateName(cfg_.policy), cfg_.k,
      cfg_.backend, static_cast<long long>(live),
      static_cast<unsigned long long>(large_.mappedBytes()),
      static_cast<unsigned long long>(registry_.policies()), own,
      kCanaryBytes ? "true" : "false");
  if (n < 0)
    return 0;
  return static_cast<std::size_t>(n) < cap ? static_cast<std::size_t>(n)
                                           : cap - 1;
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
  {
    int fd = os::open_for_writing(cfg_.stats_file, false);
    if (fd < 0) {
      const char msg[] = "defero: DEFERO_STATS_FILE: cannot open at exit\n";
      os::write_all(2, msg, sizeof msg - 1);
      return;
    }
    os::write_all(fd, buf, n);
    os::close_fd(fd);
  }
}

// --- fork -------------------------------------------------------------------
// Every lock is held across fork() so the child never inherits a heap that
// another thread was halfway through changing. Order: registry, trace,
// small heaps, arena, large (the order the allocator nests them in).

void ProcessHeap::forkPrepare() {
#if DEFERO_REALTIME
  if (rt_) // first: the model's own allocations nest inside it
    rt_->lock();
#endif
  registry_.lockRegistry();
  trace_.lockLog();
  small_.lockSlots();
  for (unsigned i = 0; i < Small::kHeaps; ++i)
    small_.heap(i).lockHeap();
  Arena::arena().lockArena();
  large_.lockHeap();
}

void ProcessHeap::forkParent() {
  unlockAfterFork(false);
}

void ProcessHeap::unlockAfterFork(bool child) {
  large_.unlockHeap();
  Arena::arena().unlockArena();
  for (unsigned i = Small::kHeaps; i-- > 0;)
    small_.heap(i).unlockHeap();
  small_.unlockSlots();
  trace_.unlockLog();
  registry_.unlockRegistry();
#if DEFERO_REALTIME
  if (rt_ && child)
    rt_->unlockInChild();
  else if (rt_)
    rt_->unlock();
#else
  (void)child;
#endif
}

void ProcessHeap::forkChild() {
  // The parent still holds (and will write) the events buffered before the
  // fork: the child must not write them a second time.
  trace_.discardBuffered();
  unlockAfterFork(true);
}

// --- real-time builds ------------------------------------------------------------

#if DEFERO_REALTIME
void ProcessHeap::startRealtime() { rt_ = RealtimeHeap::start(cfg_); }

/// A program allocation in a real-time build: the pending hint is consumed
/// and counted (the buddy policy cannot place by it), the block comes from
/// the buddy heap.
void *ProcessHeap::realtimeMalloc(std::size_t sz) {
  const PendingHint h = tls_hint;
  if (h.kind)
    tls_hint.kind = kHintNone;
  void *p = rt_->malloc(sz);
  if (!p)
    return nullptr;
  if (h.kind) {
    SlotCounters &sc = counters();
    sc.hinted_allocs.fetch_add(1, std::memory_order_relaxed);
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(rt_->base());
    const unsigned shift = 32 - cfg_.k;
    if (h.where && rt_->owns(h.where) && cfg_.k > 0 &&
        ((reinterpret_cast<std::uintptr_t>(h.where) - base) >> shift) ==
            ((reinterpret_cast<std::uintptr_t>(p) - base) >> shift))
      sc.hint_same_class.fetch_add(1, std::memory_order_relaxed);
  }
  if (trace_.enabled())
    trace_.onMalloc(p, sz);
  return p;
}

std::size_t ProcessHeap::formatRealtimeStats(char *buf, std::size_t cap) {
  unsigned long long hints[3] = {}, hinted = 0, same = 0, boot = 0;
  for (const SlotCounters &c : slots_) {
    for (int k = 0; k < 3; ++k)
      hints[k] += c.hints[k].load(std::memory_order_relaxed);
    hinted += c.hinted_allocs.load(std::memory_order_relaxed);
    same += c.hint_same_class.load(std::memory_order_relaxed);
  }
  for (unsigned i = 0; i < Small::kHeaps; ++i)
    small_.heap(i).withLock([&](auto &h) { boot += h.allocCount(); });
  const RealtimeHeap::Counts n = rt_->counts();
  char hw[700];
  if (!rt_->formatHw(hw, sizeof hw))
    return 0;
  int len = std::snprintf(
      buf, cap,
      "{\"allocs\": %llu, \"frees\": %llu, \"peak_live_bytes\": %llu, "
      "\"peak_footprint_bytes\": %llu, "
      "\"hints\": {\"neighbor\": %llu, \"tree\": %llu, \"container\": %llu}, "
      "\"hinted_allocs\": %llu, \"hint_same_class\": %llu, "
      "\"policy\": \"%s\", \"k\": %u, \"backend\": \"%s\", "
      "\"live_bytes\": %llu, \"bootstrap_allocs\": %llu, %s}\n",
      n.allocs, n.frees, n.peak_live, n.peak_used, hints[0], hints[1], hints[2],
      hinted, same, predicateName(cfg_.policy), cfg_.k, cfg_.backend, n.live, boot, hw);
  if (len < 0)
    return 0;
  return static_cast<std::size_t>(len) < cap ? static_cast<std::size_t>(len) : cap - 1;
}
#else
void ProcessHeap::startRealtime() {}
#endif

// --- construction on first use ------------------------------------------------

namespace {
alignas(ProcessHeap) unsigned char heap_storage[sizeof(ProcessHeap)];
std::atomic<int> heap_state{0}; // 0 none, 1 constructing, 2 ready
ProcessHeap *heap_ptr = nullptr;
thread_local bool constructing __attribute__((tls_model("initial-exec"))) = false;
} // namespace

ProcessHeap &processHeap() {
  if (__builtin_expect(heap_state.load(std::memory_order_acquire) == 2, 1))
    return *heap_ptr;
  int expected = 0;
  if (heap_state.compare_exchange_strong(expected, 1,
                                         std::memory_order_acq_rel)) {
    Config cfg = readConfig();
    heap_ptr = new (heap_storage) ProcessHeap(cfg);
    // The real-time heap's model allocates while it starts: this thread's
    // calls then find the process heap (its K-Bit part) ready.
    constructing = true;
    heap_ptr->startRealtime();
    constructing = false;
    heap_state.store(2, std::memory_order_release);
    return *heap_ptr;
  }
  if (constructing)
    return *heap_ptr;
  while (heap_state.load(std::memory_order_acquire) != 2)
    os::yield();
  return *heap_ptr;
}

} // namespace defero
