// process_heap.cpp - the process heap's slow paths: hints and placement,
// large blocks, realloc, the per-thread heaps' life cycle, statistics, fork.
#include "process_heap.h"

#include <cerrno>
#include <cstring>
#include <new>
#include <pthread.h>
#include <unistd.h>

namespace defero {

constinit thread_local LocalHeap *tls_heap __attribute__((tls_model("initial-exec"))) = nullptr;
constinit thread_local LocalHeap *tls_fast __attribute__((tls_model("initial-exec"))) = nullptr;
pages::LiveTotals g_live;
std::atomic<bool> g_any_policy{false};

namespace {
// Tree nodes placed in a run leave a free slot after each: the children
// that later hang under a node find room beside it, so subtrees stay in the
// same lines (set of 1M after churn, stride 1 -> 2: for_each 159 -> 115
// ns, find 440 -> 310 ns, footprint +13%; 3 and 4 gain less than they
// cost in memory).
constexpr unsigned kTreeRunStride = 2;
// Outside the small-object window a block's history is not kept, so a
// double free and a foreign pointer look alike there.
constexpr const char *kNotLive =
    "not a live block of this heap (never allocated here, or already freed)";

} // namespace

ProcessHeap::ProcessHeap(const Config &cfg) : cfg_(cfg), pid_(::getpid()) {
  g_live.canary = kCanaryBytes;
  exit_hook_.init(&ProcessHeap::threadExit);
  trace_.open(cfg_.trace_fd);
}

// --- per-thread heaps ---------------------------------------------------------

std::uint8_t ProcessHeap::divertFlag() const {
#if DEFERO_REALTIME
  if (rt_)
    return 1;
#endif
  return trace_.enabled() ? 1 : 0;
}

/// Gives the calling thread a heap: an orphan's (whole, with its spans and
/// counters) if a thread has exited, else a new one.
LocalHeap *ProcessHeap::attachHeap() {
  LocalHeap *h;
  {
    std::lock_guard<SpinLock> guard(heaps_lock_);
    h = orphans_;
    if (h) {
      orphans_ = h->next_orphan;
      h->next_orphan = nullptr;
    } else {
      void *m = PageArena::get().meta(sizeof(LocalHeap), alignof(LocalHeap));
      if (!m)
        return nullptr;
      h = new (m) LocalHeap(cfg_.k, &g_live);
      h->next_heap = heaps_;
      heaps_ = h;
    }
    h->divert = divertFlag();
  }
  h->hint = PendingHint{};
  h->forgetContainers();
  h->recent_container = h->recent_node = nullptr;
  tls_heap = h;
  tls_fast = h->divert ? nullptr : h;
  exit_hook_.arm(h);
  return h;
}

/// A thread exits: its heap is orphaned whole, for the next new thread.
void ProcessHeap::threadExit(void *value) {
  auto *h = static_cast<LocalHeap *>(value);
  ProcessHeap &self = processHeap();
  if (tls_heap != h)
    return;
  h->publishLive();
  h->hint = PendingHint{};
  tls_heap = nullptr;
  tls_fast = nullptr;
  std::lock_guard<SpinLock> guard(self.heaps_lock_);
  h->next_orphan = self.orphans_;
  self.orphans_ = h;
}

// --- allocation -----------------------------------------------------------

void *ProcessHeap::mallocSlow(std::size_t sz, bool *fresh) {
  LocalHeap *h = heap();
  if (__builtin_expect(!h, 0)) {
    errno = ENOMEM;
    return nullptr;
  }
  const PendingHint hint = takeHint(h);
#if DEFERO_REALTIME
  if (realtime())
    return realtimeMalloc(h, sz, hint);
#endif
  if (fresh)
    *fresh = false;
  if (sz > kMaxSmall)
    return mallocLarge(h, sz, os::kPageBytes, fresh);
  const unsigned cls = kbit::classOf(sz + kCanaryBytes);
  void *p = hint.kind ? hinted(h, cls, hint) : h->malloc(cls);
  if (__builtin_expect(!p, 0)) // the small-object window is full
    return mallocLarge(h, sz, os::kPageBytes, fresh);
  finishSmall(h, p, cls);
  traceMalloc(p, sz);
  return p;
}

void *ProcessHeap::mallocLarge(LocalHeap *h, std::size_t sz, std::size_t align,
                               bool *fresh) {
  void *p = large_.mallocAligned(sz, align, fresh);
  if (!p) {
    errno = ENOMEM;
    return nullptr;
  }
  h->count.large_allocs.add(1);
  noteFootprint();
  g_live.add(static_cast<std::int64_t>(large_.getSize(p)));
  traceMalloc(p, sz);
  return p;
}

void ProcessHeap::noteFootprint() {
  const std::uint64_t fp = PageArena::get().usedBytes() + large_.mappedBytes();
  std::uint64_t peak = peak_footprint_.load(std::memory_order_relaxed);
  while (fp > peak && !peak_footprint_.compare_exchange_weak(
                          peak, fp, std::memory_order_relaxed))
    ;
}

void *ProcessHeap::mallocAligned(std::size_t sz, std::size_t align) {
  if (align <= kMinAlignment)
    return malloc(sz);
  LocalHeap *h = heap();
  if (!h) {
    errno = ENOMEM;
    return nullptr;
  }
  takeHint(h);
#if DEFERO_REALTIME
  if (realtime()) {
    void *p = rt_->mallocAligned(sz, align);
    traceMalloc(p, sz);
    return p;
  }
#endif
  // Power-of-two classes hold slots aligned to their size (spans start on
  // 64 KiB boundaries), so the first class whose size align divides serves.
  const unsigned cls = align <= kMaxSmall && sz <= kMaxSmall
                           ? kbit::alignedClassOf(sz + kCanaryBytes, align)
                           : kbit::kNumClasses;
  if (cls == kbit::kNumClasses)
    return mallocLarge(h, sz, align, nullptr);
  void *p = h->malloc(cls);
  if (!p) // the small-object window is full
    return mallocLarge(h, sz, align, nullptr);
  finishSmall(h, p, cls);
  traceMalloc(p, sz);
  return p;
}

void *ProcessHeap::calloc(std::size_t n, std::size_t sz) {
  std::size_t total;
  if (__builtin_mul_overflow(n, sz, &total)) {
    if (LocalHeap *h = tls_heap)
      takeHint(h);
    errno = ENOMEM;
    return nullptr;
  }
  bool fresh = false;
#if DEFERO_REALTIME
  if (realtime()) {
    void *p = malloc(total);
    if (p)
      std::memset(p, 0, total); // a block may have been used before
    return p;
  }
#endif
  void *p = total <= kMaxSmall ? malloc(total) : mallocSlow(total, &fresh);
  if (p && !fresh) // fresh mappings are zero already: do not touch them
    std::memset(p, 0, total);
  return p;
}

void ProcessHeap::freeSlow(void *p, const char *call) {
  if (!p)
    return;
  SlotPage *pg = PageArena::get().spanOf(p);
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
  LocalHeap *h = heap();
  if (pg) {
    const std::uintptr_t off = reinterpret_cast<std::uintptr_t>(p) - pg->start;
    const unsigned i = static_cast<unsigned>(kbit::divideByClass(off, pg->cls));
    if (i >= pg->slots)
      os::fatal_pointer(call, p, "pointer not allocated by this heap");
    if (std::uintptr_t{i} * pg->slot_bytes != off)
      os::fatal_pointer(call, p, "pointer is inside a block, not its start");
    checkCanary(p, pg->slot_bytes, call);
    if (pg->owner == h)
      h->freeLocal(pg, i, call);
    else
      pg->owner->freeRemote(p); // (a double free is reported when collected)
    if (h)
      h->count.frees[pg->cls].add(1);
    else
      g_live.add(-static_cast<std::int64_t>(pg->slot_bytes - kCanaryBytes));
    return;
  }
  const std::size_t bytes = large_.getSize(p);
  if (bytes == 0)
    os::fatal_pointer(call, p, kNotLive);
  noteFootprint(); // the peak may be now, just before this block goes
  if (!large_.tryFree(p))
    os::fatal_pointer(call, p, kNotLive);
  if (h)
    h->count.large_frees.add(1);
  g_live.add(-static_cast<std::int64_t>(bytes));
}

void *ProcessHeap::realloc(void *p, std::size_t sz, const char *call) {
  if (!p)
    return malloc(sz);
  if (LocalHeap *h = tls_heap)
    takeHint(h); // a container's node is never realloc'ed
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
  if (SlotPage *pg = PageArena::get().spanOf(p)) {
    const std::uintptr_t off = reinterpret_cast<std::uintptr_t>(p) - pg->start;
    const unsigned i = static_cast<unsigned>(kbit::divideByClass(off, pg->cls));
    if (i >= pg->slots || std::uintptr_t{i} * pg->slot_bytes != off)
      os::fatal_pointer(call, p, "pointer is inside a block, not its start");
    if (pg->owner == tls_heap && tls_heap->isFree(pg, i))
      os::fatal_pointer(call, p, "pointer is not a live block of this heap");
    checkCanary(p, pg->slot_bytes, call);
    old = pg->slot_bytes - kCanaryBytes;
    // Same class, or a smaller request that still needs more than half the
    // slot: keep the block.
    if (sz <= old && (sz + kCanaryBytes > old / 2 || pg->cls == 0)) {
      if (trace_.enabled())
        trace_.onRealloc(p, p, sz);
      return p;
    }
  } else {
    old = large_.getSize(p);
    if (old == 0)
      os::fatal_pointer(call, p, kNotLive);
    // Large to large: let the kernel move the pages. (Traced runs copy
    // instead, so that the trace's free and malloc stay ordered with other
    // threads' calls; a remap and its log line are not atomic, another
    // thread could log them first.)
    if (sz > kMaxSmall && !trace_.enabled()) {
      noteFootprint();
      void *q = large_.remap(p, sz);
      if (!q) {
        errno = ENOMEM;
        return nullptr;
      }
      const std::size_t now = large_.getSize(q);
      g_live.add(static_cast<std::int64_t>(now) - static_cast<std::int64_t>(old));
      noteFootprint();
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
  if (SlotPage *pg = PageArena::get().spanOf(p)) {
    const std::uintptr_t off = reinterpret_cast<std::uintptr_t>(p) - pg->start;
    const unsigned i = static_cast<unsigned>(kbit::divideByClass(off, pg->cls));
    if (i >= pg->slots || std::uintptr_t{i} * pg->slot_bytes != off)
      return 0;
    // Another thread's span is read without its owner's lock-free state:
    // a block it owns is trusted to be live (as glibc does).
    if (pg->owner == tls_heap && tls_heap->isFree(pg, i))
      return 0;
    return pg->slot_bytes - kCanaryBytes;
  }
  return large_.getSize(p);
}

void *ProcessHeap::allocNear(std::size_t sz, const void *hint) {
  LocalHeap *h = heap();
  if (!h) {
    errno = ENOMEM;
    return nullptr;
  }
  takeHint(h);
#if DEFERO_REALTIME
  if (realtime()) // the buddy policy has no placement to steer
    return realtimeMalloc(h, sz, PendingHint{});
#endif
  if (sz > kMaxSmall)
    return mallocLarge(h, sz, os::kPageBytes, nullptr);
  const unsigned cls = kbit::classOf(sz + kCanaryBytes);
  void *p = nullptr;
  if (SlotPage *pg = h->mySpan(hint, cls))
    p = h->takeNearest(pg, hint, true);
  if (!p)
    p = h->malloc(cls);
  if (!p)
    return mallocLarge(h, sz, os::kPageBytes, nullptr);
  finishSmall(h, p, cls);
  traceMalloc(p, sz);
  return p;
}

void *ProcessHeap::allocPath(std::size_t sz, std::uint64_t bits, unsigned depth) {
  (void)bits;
  (void)depth;
  LocalHeap *h = heap();
  if (!h) {
    errno = ENOMEM;
    return nullptr;
  }
  takeHint(h);
#if DEFERO_REALTIME
  if (realtime())
    return realtimeMalloc(h, sz, PendingHint{});
#endif
  if (sz > kMaxSmall)
    return mallocLarge(h, sz, os::kPageBytes, nullptr);
  const unsigned cls = kbit::classOf(sz + kCanaryBytes);
  void *p = h->malloc(cls);
  if (!p)
    return mallocLarge(h, sz, os::kPageBytes, nullptr);
  finishSmall(h, p, cls);
  traceMalloc(p, sz);
  return p;
}

long long ProcessHeap::classOf(const void *p) {
  PageArena &a = PageArena::get();
  if (!p || !a.inWindow(p))
    return -1;
  return static_cast<long long>((reinterpret_cast<std::uintptr_t>(p) - a.base()) >>
                                (32 - cfg_.k));
}

// --- hints ------------------------------------------------------------------

/// Places a small block of class cls that carries a hint, under the
/// container's policy: beside the anchor (the neighbour, the parent on the
/// side of the insert, or the container's last node) if a slot within a
/// line or two of it is free; else the next slot of the container's run;
/// else, for a container that has no run yet and no anchor here, an
/// unhinted slot.
void *ProcessHeap::hinted(LocalHeap *h, unsigned cls, const PendingHint &hint) {
  pages::ContainerSlot *cs = h->container(hint.container);
  if (!cs) // no memory for the table: an unhinted block
    return h->malloc(cls);
  if (registry_.used() && cs->epoch != registry_.epoch()) {
    ContainerRegistry::Entry e;
    const bool known = hint.container && registry_.lookup(hint.container, e);
    cs->policy = known ? e.policy : -1;
    cs->k = known ? e.k : 0;
    cs->epoch = registry_.epoch();
  }
  const Predicate pred = cs->policy >= 0 ? static_cast<Predicate>(cs->policy) : cfg_.policy;
  const void *anchor = hint.where;
  if (hint.kind == kHintContainer)
    anchor = hint.container == h->recent_container ? h->recent_node : cs->last;
  // An anchor inside the container object itself is its header: the
  // container is empty (or inserting at its end sentinel). A container
  // that is empty starts afresh, whatever an earlier container at the same
  // address left in the table (so placement never depends on which
  // addresses a program's containers happen to reuse).
  if (inContainer(anchor, hint.container)) {
    cs->up = pages::Run{};
    cs->down = pages::Run{};
    cs->runs = 0;
    cs->last = nullptr;
    if (h->recent_container == hint.container)
      h->recent_node = nullptr;
  }
  void *p = nullptr;
  if (pred != Predicate::First) {
    // A node that goes before its anchor in the container's order goes
    // below it, others above: in-order and list order walk up the
    // addresses.
    SlotPage *pg = h->mySpan(anchor, cls);
    const bool down = pg && linksBefore(PendingHint{hint.kind, hint.side, hint.container, anchor});
    if (pg)
      p = h->takeBeside(pg, anchor, LocalHeap::lineReach(cls), !down);
    if (!p && (pg || (down ? cs->down.span : cs->up.span)))
      p = h->takeRun(*cs, cls, down, hint.kind == kHintTree ? kTreeRunStride : 1);
  }
  if (!p)
    p = h->malloc(cls);
  if (!p)
    return nullptr;
  cs->last = p;
  h->recent_container = hint.container;
  h->recent_node = p;
  h->count.hinted_allocs.add(1);
  if (cs->policy >= 0)
    h->count.policy_allocs.add(1);
  // "Same class" at the container's own K if it set one.
  PageArena &a = PageArena::get();
  const unsigned k = cs->k ? cs->k : cfg_.k;
  if (anchor && a.inWindow(anchor) &&
      ((reinterpret_cast<std::uintptr_t>(anchor) - a.base()) >> (32 - k)) ==
          ((reinterpret_cast<std::uintptr_t>(p) - a.base()) >> (32 - k)))
    h->count.hint_same_class.add(1);
  return p;
}

void ProcessHeap::hintNeighbor(const void *c, const void *n) {
  if (LocalHeap *h = heap()) {
    h->count.hints[0].add(1);
    setHint(h, PendingHint{kHintNeighbor, 0, c, n});
  }
}
void ProcessHeap::hintTree(const void *c, const void *parent, int insert_left) {
  if (LocalHeap *h = heap()) {
    h->count.hints[1].add(1);
    setHint(h, PendingHint{kHintTree, static_cast<std::int8_t>(insert_left != 0), c, parent});
  }
}
void ProcessHeap::hintContainer(const void *c) {
  if (LocalHeap *h = heap()) {
    h->count.hints[2].add(1);
    setHint(h, PendingHint{kHintContainer, 0, c, nullptr});
  }
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
  g_any_policy.store(true, std::memory_order_relaxed);
}

// --- statistics -----------------------------------------------------------

std::size_t ProcessHeap::formatStats(char *buf, std::size_t cap) {
#if DEFERO_REALTIME
  if (rt_)
    return formatRealtimeStats(buf, cap);
#endif
  noteFootprint();
  unsigned long long allocs = 0, frees = 0, hints[3] = {}, hinted = 0, same = 0,
                     own = 0;
  // Live bytes now, exactly (every heap's counts, read without stopping
  // them), and the peak it may be.
  std::int64_t live = g_live.live.load(std::memory_order_relaxed);
  {
    std::lock_guard<SpinLock> guard(heaps_lock_);
    for (LocalHeap *h = heaps_; h; h = h->next_heap) {
      allocs += h->smallAllocs() + h->count.large_allocs.get();
      frees += h->smallFrees() + h->count.large_frees.get();
      live += h->smallLiveBytes(kCanaryBytes) - h->livePublished();
      for (int k = 0; k < 3; ++k)
        hints[k] += h->count.hints[k].get();
      hinted += h->count.hinted_allocs.get();
      same += h->count.hint_same_class.get();
      own += h->count.policy_allocs.get();
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
      "\"checked\": %s}\n",
      allocs, frees, static_cast<long long>(peak > live ? peak : live),
      static_cast<unsigned long long>(peak_footprint_.load()), hints[0],
      hints[1], hints[2], hinted, same, predicateName(cfg_.policy), cfg_.k,
      cfg_.backend, static_cast<long long>(live),
      static_cast<unsigned long long>(large_.mappedBytes()),
      static_cast<unsigned long long>(registry_.policies()), own,
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

// --- fork -------------------------------------------------------------------
// Every lock is held across fork() so the child never inherits a structure
// another thread was halfway through changing. Order: registry, trace, the
// heap lists, the arena, large (the order the allocator nests them in).
// The owners' fast paths take no lock: a thread's heap is its own, and in
// the child every heap but the forking thread's becomes an orphan (its
// thread does not exist there). A remote free in flight is either in its
// list or not: at worst a block is leaked in the child, never corrupted.

void ProcessHeap::forkPrepare() {
#if DEFERO_REALTIME
  if (rt_) // first: the model's own allocations nest inside it
    rt_->lock();
#endif
  registry_.lockRegistry();
  trace_.lockLog();
  heaps_lock_.lock();
  PageArena::get().lockAll();
  large_.lockHeap();
}

void ProcessHeap::forkParent() { unlockAfterFork(false); }

void ProcessHeap::forkChild() {
  // The parent still holds (and will write) the events buffered before the
  // fork: the child must not write them a second time.
  trace_.discardBuffered();
  LocalHeap *mine = tls_heap;
  orphans_ = nullptr;
  for (LocalHeap *h = heaps_; h; h = h->next_heap) {
    h->next_orphan = nullptr;
    if (h != mine) {
      h->next_orphan = orphans_;
      orphans_ = h;
    }
  }
  unlockAfterFork(true);
}

/// Releases what forkPrepare took, in the reverse order.
void ProcessHeap::unlockAfterFork(bool child) {
  large_.unlockHeap();
  PageArena::get().unlockAll();
  heaps_lock_.unlock();
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

// --- real-time builds ------------------------------------------------------------

#if DEFERO_REALTIME
void ProcessHeap::startRealtime() {
  rt_ = RealtimeHeap::start(cfg_);
  std::lock_guard<SpinLock> guard(heaps_lock_);
  for (LocalHeap *h = heaps_; h; h = h->next_heap)
    h->divert = divertFlag();
  if (rt_)
    tls_fast = nullptr; // (the only thread with a heap yet: the constructor)
}

/// A program allocation in a real-time build: the pending hint is consumed
/// and counted (the buddy policy cannot place by it), the block comes from
/// the buddy heap.
void *ProcessHeap::realtimeMalloc(LocalHeap *h, std::size_t sz, const PendingHint &hint) {
  void *p = rt_->malloc(sz);
  if (!p)
    return nullptr;
  if (hint.kind) {
    h->count.hinted_allocs.add(1);
    const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(rt_->base());
    const unsigned shift = 32 - cfg_.k;
    if (hint.where && rt_->owns(hint.where) && cfg_.k > 0 &&
        ((reinterpret_cast<std::uintptr_t>(hint.where) - base) >> shift) ==
            ((reinterpret_cast<std::uintptr_t>(p) - base) >> shift))
      h->count.hint_same_class.add(1);
  }
  traceMalloc(p, sz);
  return p;
}

std::size_t ProcessHeap::formatRealtimeStats(char *buf, std::size_t cap) {
  unsigned long long hints[3] = {}, hinted = 0, same = 0, boot = 0;
  {
    std::lock_guard<SpinLock> guard(heaps_lock_);
    for (const LocalHeap *h = heaps_; h; h = h->next_heap) {
      for (int k = 0; k < 3; ++k)
        hints[k] += h->count.hints[k].get();
      hinted += h->count.hinted_allocs.get();
      same += h->count.hint_same_class.get();
      boot += h->smallAllocs();
    }
  }
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

namespace {
__attribute__((noinline)) void *mallocSlowEntry(std::size_t sz) {
  return processHeap().mallocSlow(sz, nullptr);
}
} // namespace

// The hinted fast path calls nothing, so this needs no stack frame.
void *mallocFull(std::size_t sz) {
  if (void *p = mallocHintedFast(sz))
    return p;
  return mallocSlowEntry(sz);
}
void freeFull(void *p, const char *call) { processHeap().freeSlow(p, call); }

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
  if (heap_state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    Config cfg = readConfig();
    heap_ptr = new (heap_storage) ProcessHeap(cfg);
    // The real-time heap's model allocates while it starts: this thread's
    // calls then find the process heap (its small heaps) ready.
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
