// process_heap.cpp - the process heap's routing off the inline fast paths:
// malloc's and free's full paths (small, mid and large blocks), calloc,
// realloc, aligned allocation, usable size; the per-thread heaps' life
// cycle (attach, exit, orphans); the process heap's construction on first
// use. Hints' slow paths, the one-shot hint's malloc (mallocFull) and
// policies are hint_channel.cpp's, statistics stats.cpp's, fork fork.cpp's.
//
// Cost: malloc's full path for a small block is a refill of its word cache
// (once per up to 64 blocks); a block above 4 KiB a best fit in the
// thread's mid heap.
#include "process_heap.h"

#include <cerrno>
#include <cstring>
#include <new>
#include <pthread.h>
#include <unistd.h>

namespace defero {

NoFastHeap g_no_fast_heap;

constinit LocalHeap::Recent kClosedRecent;
constinit thread_local ThreadHeaps tls __attribute__((tls_model("initial-exec"))) = {
    &g_no_fast_heap.heap, nullptr, &kClosedRecent};
pages::LiveTotals g_live;
std::atomic<bool> g_any_policy{false};
bool g_place_default = true;
bool g_auto_default = true;
std::atomic<bool> g_new_ours{false};
std::atomic<bool> g_fused_open{false};

void noteFusedOpen() {
  g_fused_open.store(g_place_default && !g_any_policy.load(std::memory_order_relaxed) &&
                         g_new_ours.load(std::memory_order_relaxed),
                     std::memory_order_relaxed);
}

void openRecent(LocalHeap *h) {
  tls.recent = h && !h->divert && g_place_default && g_new_ours.load(std::memory_order_relaxed)
                   ? &h->recent
                   : &kClosedRecent;
}

namespace {
// Outside the small-object window a block's history is not kept, so a
// double free and a foreign pointer look alike there.
constexpr const char *kNotLive =
    "not a live block of this heap (never allocated here, or already freed)";
constexpr const char *kDoubleFree = "double free (block is already free)";

} // namespace

ProcessHeap::ProcessHeap(const Config &cfg) : cfg_(cfg), pid_(::getpid()) {
  g_place_default = cfg.policy != Predicate::First;
  g_auto_default = cfg.policy == Predicate::Auto;
  noteFusedOpen();
  pages::g_decay_ms = cfg.decay_ms;
  pages::g_max_resident = cfg.max_resident;
  pages::g_large_decay = [] { processHeap().large_.decay(false); };
  g_live.canary = kCanaryBytes;
  exit_hook_.init(&ProcessHeap::threadExit);
  trace_.open(cfg_.trace_fd);
}

// --- per-thread heaps ---------------------------------------------------------

std::uint8_t ProcessHeap::divertFlag() const {
  if constexpr (kRealtimeBuild) {
    if (rt_)
      return 1;
  }
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
  h->noteRecent(nullptr, nullptr, nullptr, 0, 0);
  tls.heap = h;
  tls.fast = h->divert ? noFastHeap() : h;
  if (!h->divert && !kCanaryBytes)
    h->openStacks();
  openRecent(h);
  exit_hook_.arm(h);
  return h;
}

/// A thread exits: its heap is orphaned whole, for the next new thread.
void ProcessHeap::threadExit(void *value) {
  auto *h = static_cast<LocalHeap *>(value);
  ProcessHeap &self = processHeap();
  if (tls.heap != h)
    return;
  for (unsigned cls = 0; cls < LocalHeap::kClasses; ++cls)
    h->flushStack(cls, 0);
  h->closeStacks();
  h->flushOutbox(); // the blocks it freed for other heaps go home now
  h->uncacheAll();  // its counts become exact
  h->endStreak();
  h->publishLive();
  h->large_cache.drainTo(self.large_);
  h->hint = PendingHint{};
  tls.heap = nullptr;
  tls.fast = noFastHeap();
  tls.recent = &kClosedRecent;
  std::lock_guard<SpinLock> guard(self.heaps_lock_);
  h->next_orphan = self.orphans_;
  self.orphans_ = h;
  self.sweepOrphans();
}

/// With heaps_lock_ held (no thread can adopt an orphan meanwhile, so this
/// thread may act as every orphan's owner): each orphan takes home the
/// blocks other threads freed for it since its thread exited (nobody else
/// would until a new thread adopts it: they would keep its spans from
/// emptying), and gives the memory of its Empty spans back to the OS at
/// once (no thread of its will call its decay again), unless the delay is
/// `never`. The large heap's free runs go back too: a program whose
/// threads have finished their work keeps no memory it freed.
void ProcessHeap::sweepOrphans() {
  const bool release = pages::g_decay_ms != ~std::uint32_t{0};
  const std::uint32_t now = os::now_ms();
  for (LocalHeap *o = orphans_; o; o = o->next_orphan) {
    o->collectRemote();
    o->mid.collect();
    o->mid.flushAll();
    if (release)
      o->decay(now, true);
  }
  large_.decay(true); // (likewise the large blocks' free runs)
}

// --- allocation -----------------------------------------------------------

void *ProcessHeap::mallocSlow(std::size_t sz, bool *fresh, bool node) {
  LocalHeap *h = heap();
  if (__builtin_expect(!h, 0)) {
    errno = ENOMEM;
    return nullptr;
  }
  const PendingHint hint = takeHint(h);
  if constexpr (kRealtimeBuild) {
    if (realtime())
      return realtimeMalloc(h, sz, hint);
  }
  if (fresh)
    *fresh = false;
  if (sz > kMaxSmall) {
    if (sz <= kMidMax)
      if (void *p = mallocMid(h, sz, fresh))
        return p;
    return mallocLarge(h, sz, os::kPageBytes, fresh);
  }
  if (sz > kMidMin && !hint.kind)
    if (void *p = mallocMid(h, sz))
      return p;
  const unsigned cls = node && hint.kind && sz <= kMaxFast ? fusedClassOf(sz)
                                                           : kbit::classOf(sz + kCanaryBytes);
  void *p = hint.kind ? hinted(h, sz, cls, hint) : h->malloc(cls, kGangs ? sz : 0);
  if (__builtin_expect(!p, 0)) // the small-object window is full
    return mallocLarge(h, sz, os::kPageBytes, fresh);
  finishSmall(h, p, cls);
  traceMalloc(p, sz);
  return p;
}

void *ProcessHeap::mallocHintedOpen(LocalHeap *h, std::size_t sz, const PendingHint &hint) {
  if (__builtin_expect(h->hint.kind != kHintNone, 0))
    takeHint(h);
  const unsigned cls = sz <= kMaxFast ? fusedClassOf(sz) : kbit::classOf(sz + kCanaryBytes);
  void *p = hinted(h, sz, cls, hint);
  if (__builtin_expect(!p, 0)) // the small-object window is full
    return mallocLarge(h, sz, os::kPageBytes, nullptr);
  finishSmall(h, p, cls);
  return p;
}

/// A block of 4 KiB-32 MiB by best fit from h's mid heap (nullptr: it has
/// none or it is full; the size classes or the large heap serve then).
void *ProcessHeap::mallocMid(LocalHeap *h, std::size_t sz, bool *fresh) {
  std::size_t got;
  void *p = h->mid.malloc(sz + kCanaryBytes, &got, fresh);
  if (!p)
    return nullptr;
  armCanary(p, got);
  // Blocks other threads freed for this heap's spans come home here too (a
  // thread that now makes only middle-sized blocks never refills a class,
  // and their spans would stay pinned); two loads when there are none.
  h->collectRemote();
  settleMid(h);
  traceMalloc(p, sz);
  return p;
}

/// What a take from h's mid region (or a block grown in place) leaves to
/// do: as much of the spans' free memory given back as the region newly
/// made resident, the other pools' decay when the mid heap swept, and the
/// live bytes published.
void ProcessHeap::settleMid(LocalHeap *h) {
  if (const std::size_t grown = h->mid.takeGrown())
    h->releaseEmpty(grown);
  if (__builtin_expect(h->mid.takeSwept(), 0)) // (the spans' and large blocks' decay)
    h->decay(h->mid.now());
  // Like the word caches' claims (the live peak's bound): taken from the
  // region, not from the cache of freed blocks.
  if (__builtin_expect(h->mid.regionTaken() >= static_cast<std::int64_t>(LocalHeap::kPublishBytes), 0)) {
    h->mid.resetRegionTaken();
    h->publishLive();
    noteFootprint();
  }
}

/// Frees p, a block of a mid heap's slice: by its owner into the heap's
/// free runs, by any other thread onto the owner's remote list.
void ProcessHeap::freeMid(LocalHeap *h, void *p, const char *call) {
  pages::MidHeap *o = pages::MidArena::get().ownerOf(p);
  const std::size_t bytes = o->usableSize(p);
  if (bytes == 0)
    os::fatal_pointer(call, p, o->freedAlready(p) ? kDoubleFree : kNotLive);
  checkCanary(p, bytes, call);
  if (h && &h->mid == o && tls.heap == h) {
    o->free(p);
    return;
  }
  if (!o->markFreed(p)) // (another thread freed it meanwhile)
    os::fatal_pointer(call, p, kDoubleFree);
  if (h)
    h->mid.countFreeOfOther(bytes);
  else
    g_live.add(-static_cast<std::int64_t>(bytes - kCanaryBytes));
  o->freeRemote(p); // (a double free is reported when the owner collects it)
}

void *ProcessHeap::mallocLarge(LocalHeap *h, std::size_t sz, std::size_t align,
                               bool *fresh) {
  std::size_t bytes = 0;
  void *p = nullptr;
  if (align == os::kPageBytes && sz <= MmapThreadCache::kMaxBlock) {
    // The thread's own cache first: no lock (a block it gets back into the
    // registry; should that fail, the block goes to the shared cache).
    p = h->large_cache.take((sz + os::kPageBytes - 1) & ~(os::kPageBytes - 1), bytes);
    if (p && !large_.adopt(p, bytes)) {
      large_.release(p, bytes);
      p = nullptr;
    }
    if (p && fresh)
      *fresh = false;
  }
  if (!p)
    p = large_.mallocAligned(sz, align, fresh, &bytes);
  if (!p) {
    errno = ENOMEM;
    return nullptr;
  }
  h->count.large_allocs.add(1);
  noteFootprint();
  g_live.add(static_cast<std::int64_t>(bytes));
  traceMalloc(p, sz);
  return p;
}

void ProcessHeap::noteFootprint() {
  const std::uint64_t fp = PageArena::get().usedBytes() + large_.mappedBytes() + midHeldBytes();
  std::uint64_t peak = peak_footprint_.load(std::memory_order_relaxed);
  while (fp > peak && !peak_footprint_.compare_exchange_weak(
                          peak, fp, std::memory_order_relaxed))
    ;
}

void *ProcessHeap::mallocAligned(std::size_t sz, std::size_t align) {
  if (align <= kMinAlignment)
    return malloc(sz);
  LocalHeap *h = heapDroppingHint();
  if (!h)
    return nullptr;
  if constexpr (kRealtimeBuild) {
    if (realtime()) {
      void *p = rt_->mallocAligned(sz, align);
      traceMalloc(p, sz);
      return p;
    }
  }
  // A class's slots are aligned to the largest power of two dividing its
  // size (spans start on 64 KiB boundaries, and a span's colour, a multiple
  // of 128 bytes, is 0 where that power is larger: PageArena::colourBytes),
  // so the first class whose size align divides serves.
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
    if (LocalHeap *h = tls.heap)
      takeHint(h);
    errno = ENOMEM;
    return nullptr;
  }
  bool fresh = false;
  if constexpr (kRealtimeBuild) {
    if (realtime()) {
      void *p = malloc(total);
      if (p)
        std::memset(p, 0, total); // a block may have been used before
      return p;
    }
  }
  void *p = total <= kMaxSmall ? malloc(total) : mallocSlow(total, &fresh);
  if (p && !fresh) // fresh mappings are zero already: do not touch them
    std::memset(p, 0, total);
  return p;
}

bool ProcessHeap::freeGang(LocalHeap *h, SlotPage *pg, void *p, const char *call) {
  pages::SpanHeap::Gang g;
  if (!kGangs || !pages::SpanHeap::gangOf(pg, p, g))
    return false;
  auto *owner = static_cast<LocalHeap *>(pg->owner);
  if (owner == h)
    h->freeGang(pg, p, g, call);
  else if (h) // (the owner checks its run when it collects it)
    h->freeToOther(owner, p);
  else
    owner->freeRemote(p);
  if (h)
    h->count.frees[g.cls].add(1);
  else
    g_live.add(-static_cast<std::int64_t>(kbit::kClassBytes[g.cls]));
  return true;
}

void ProcessHeap::freeSlow(void *p, const char *call) {
  if (!p)
    return;
  SlotPage *pg = PageArena::get().spanOf(p);
  // Logged before the block goes back: once it is back another thread may
  // get it and log its malloc, which must come after this free.
  if (trace_.enabled())
    trace_.onFree(p);
  if constexpr (kRealtimeBuild) {
    if (rt_ && rt_->owns(p)) {
      rt_->free(p, call);
      return;
    }
  }
  LocalHeap *h = heap();
  if (pg) {
    const unsigned i = pg->slotAt(p);
    if (i == pages::kNoSlot && freeGang(h, pg, p, call))
      return;
    if (i == pages::kNoSlot)
      os::fatal_pointer(call, p,
                        pg->slotHolding(p) >= pg->slots ? "pointer not allocated by this heap"
                                                        : "pointer is inside a block, not its start");
    checkCanary(p, pg->slot_bytes, call);
    if constexpr (kCanaryBytes == 0) {
      // A block on a free stack (any thread's) carries the mark; a live
      // block carries it only if the program wrote exactly that word.
      if (LocalHeap::marked(p))
        os::fatal_pointer(call, p, kDoubleFree);
      // (As free's fast path: the owner's block of a span where no hint
      // placed onto its stack.)
      if (h && tls.fast == h && h->stackOpen(pg->cls) && pg->owner == h &&
          __atomic_load_n(&pg->placed_owner, __ATOMIC_RELAXED) != h) {
        LocalHeap::WordCache *c = h->cache(pg->cls);
        if (!LocalHeap::pushFreed(c, p)) { // full: half of it goes back
          h->flushStack(pg->cls, c->limit / 2);
          LocalHeap::pushFreed(c, p);
        }
        return;
      }
    }
    if (pg->owner == h)
      h->freeLocal(pg, i, call);
    else if (h) // (a double free is reported when the owner collects it)
      h->freeToOther(static_cast<LocalHeap *>(pg->owner), p);
    else
      static_cast<LocalHeap *>(pg->owner)->freeRemote(p);
    if (h)
      h->count.frees[pg->cls].add(1);
    else
      g_live.add(-static_cast<std::int64_t>(pg->slot_bytes - kCanaryBytes));
    return;
  }
  if (pages::MidArena::get().contains(p)) {
    freeMid(h, p, call);
    return;
  }
  noteFootprint(); // the peak may be now, just before this block goes
  const std::size_t bytes = large_.unregister(p);
  if (bytes == 0)
    os::fatal_pointer(call, p, kNotLive);
  if (h) {
    h->large_cache.put(p, bytes, large_);
    h->count.large_frees.add(1);
  } else {
    large_.release(p, bytes);
  }
  g_live.add(-static_cast<std::int64_t>(bytes));
}

void *ProcessHeap::realloc(void *p, std::size_t sz, const char *call) {
  if (!p)
    return malloc(sz);
  if (LocalHeap *h = tls.heap)
    takeHint(h); // a container's node is never realloc'ed
  if constexpr (kRealtimeBuild) {
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
  }
  if (sz == 0) { // glibc's behaviour: free and return NULL
    free(p, call);
    return nullptr;
  }
  std::size_t old;
  if (SlotPage *pg = PageArena::get().spanOf(p)) {
    const unsigned i = pg->slotAt(p);
    bool small_class = pg->cls == 0;
    if (pages::SpanHeap::Gang g; i == pages::kNoSlot) {
      if (!kGangs || !pages::SpanHeap::gangOf(pg, p, g))
        os::fatal_pointer(call, p, "pointer is inside a block, not its start");
      old = pages::SpanHeap::gangBytes(pg, g); // (a gang's block: SpanHeap::gangMalloc)
      small_class = false;
    } else {
      if ((pg->owner == tls.heap && tls.heap->isFree(pg, i)) ||
          (kCanaryBytes == 0 && LocalHeap::marked(p))) // (on a free stack)
        os::fatal_pointer(call, p, "pointer is not a live block of this heap");
      checkCanary(p, pg->slot_bytes, call);
      old = pg->slot_bytes - kCanaryBytes;
    }
    // Same class, or a smaller request that still needs more than half the
    // slot: keep the block.
    if (sz <= old && (sz + kCanaryBytes > old / 2 || small_class)) {
      if (trace_.enabled())
        trace_.onRealloc(p, p, sz);
      return p;
    }
  } else if (pages::MidArena::get().contains(p)) {
    pages::MidHeap *o = pages::MidArena::get().ownerOf(p);
    old = o->usableSize(p);
    if (old == 0)
      os::fatal_pointer(call, p, kNotLive);
    checkCanary(p, old, call);
    old -= kCanaryBytes;
    // A smaller request that still needs more than half the block: keep it.
    if (sz <= old && sz > old / 2) {
      if (trace_.enabled())
        trace_.onRealloc(p, p, sz);
      return p;
    }
    // The owner's block longer than its cache keeps: in place when it can
    // (the tail given back, or the free run above taken), as the large
    // heap's blocks were (the region is the owner's alone, so no other
    // thread's call comes between this and its trace line).
    LocalHeap *h = tls.heap;
    const std::size_t bytes = (sz + kCanaryBytes + pages::MidHeap::kUnitBytes - 1) &
                              ~(pages::MidHeap::kUnitBytes - 1);
    if (h && &h->mid == o && sz <= kMidMax && o->resize(p, bytes)) {
      armCanary(p, bytes);
      settleMid(h);
      if (trace_.enabled())
        trace_.onRealloc(p, p, sz);
      return p;
    }
  } else {
    old = large_.getSize(p);
    if (old == 0)
      os::fatal_pointer(call, p, kNotLive);
    // Large to large: in place in the fit region, or a mapping's pages
    // moved by the kernel; failing that, copied below. (Traced runs copy,
    // so that the trace's free and malloc stay ordered with other
    // threads' calls; a remap and its log line are not atomic, another
    // thread could log them first.)
    if (sz > kMaxSmall && !trace_.enabled()) {
      noteFootprint();
      if (void *q = large_.remap(p, sz)) {
        const std::size_t now = large_.getSize(q);
        g_live.add(static_cast<std::int64_t>(now) - static_cast<std::int64_t>(old));
        noteFootprint();
        return q;
      }
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
  if constexpr (kRealtimeBuild) {
    if (rt_ && rt_->owns(p))
      return rt_->usableSize(p);
  }
  if (SlotPage *pg = PageArena::get().spanOf(p)) {
    const unsigned i = pg->slotAt(p);
    if (pages::SpanHeap::Gang g; i == pages::kNoSlot)
      return kGangs && pages::SpanHeap::gangOf(pg, p, g) ? pages::SpanHeap::gangBytes(pg, g) : 0;
    // Another thread's span is read without its owner's lock-free state:
    // a block it owns is trusted to be live (as glibc does).
    if (pg->owner == tls.heap && tls.heap->isFree(pg, i))
      return 0;
    return pg->slot_bytes - kCanaryBytes;
  }
  if (pages::MidArena::get().contains(p)) {
    const std::size_t bytes = pages::MidArena::get().ownerOf(p)->usableSize(p);
    return bytes ? bytes - kCanaryBytes : 0;
  }
  return large_.getSize(p);
}

long long ProcessHeap::classOf(const void *p) {
  PageArena &a = PageArena::get();
  if (!p || !a.inWindow(p))
    return -1;
  return static_cast<long long>((reinterpret_cast<std::uintptr_t>(p) - a.base()) >>
                                (32 - cfg_.k));
}

void *mallocSlowEntry(std::size_t sz, bool node) {
  return processHeap().mallocSlow(sz, nullptr, node);
}

void *mallocRefill(LocalHeap *h, unsigned cls, std::size_t sz) {
  if (h == noFastHeap()) // the thread's first call, a pending hint, ...
    return mallocFull(sz);
  if (void *p = h->mallocSlow(cls, kGangs ? sz : 0)) {
    finishSmall(h, p, cls);
    return p;
  }
  return mallocFull(sz); // the small-object window is full
}

void freeFull(void *p, const char *call) {
  // A mid heap's block with the fast path open (no trace, no real-time
  // backend): freeMid, as freeSlow would reach it after its other tests.
  LocalHeap *h = tls.fast;
  if (h != noFastHeap() && pages::MidArena::get().contains(p))
    return processHeap().freeMidOpen(h, p, call);
  processHeap().freeSlow(p, call);
}

void freeToOwner(void *p, const char *call, LocalHeap *h, SlotPage *pg) {
  if (h == noFastHeap() || LocalHeap::marked(p))
    return freeFull(p, call);
  h->freeToOther(static_cast<LocalHeap *>(pg->owner), p);
  h->count.frees[pg->cls].add(1);
}

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
    if constexpr (kRealtimeBuild)
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
