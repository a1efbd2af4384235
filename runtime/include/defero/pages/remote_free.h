// remote_free.h - RemoteFreeLayer: how blocks freed by other threads get
// home (layers.h). Each heap has one lock-free list (a Treiber stack
// through the blocks' first words) that other threads push onto and its
// owner takes whole with one exchange; each thread keeps an outbox of the
// blocks it freed for other heaps and sends them in batches (snmalloc's
// remote cache), so a thread freeing others' blocks pays one CAS per
// batch, not per block.
//
// Costs: a free of another heap's block, a hash into the outbox and a
// link; one CAS per kOutboxBatch blocks; the owner's collection, one
// exchange and a free per block, on its refill path.
#pragma once

#include <atomic>
#include <cstdint>

#include "defero/pages/layers.h"
#include "defero/pages/page_arena.h"

namespace defero::pages {

template <SpanSource Super> class RemoteFreeLayer : public Super {
public:
  using Super::Super;

  /// Another thread's free of a block of one of this heap's spans.
  void freeRemote(void *p) { receive(p, p); }

  /// Hands a chain of blocks this heap owns (linked through their first
  /// words, head to tail) back to it: one CAS.
  void receive(void *head, void *tail) {
    void *old = remote_.load(std::memory_order_relaxed);
    do
      *static_cast<void **>(tail) = old;
    while (!remote_.compare_exchange_weak(old, head, std::memory_order_release,
                                          std::memory_order_relaxed));
  }

  /// This thread frees p, a block of `owner`'s (another heap's): p joins
  /// the batch for that heap in the outbox, which goes over with one CAS
  /// when it holds kOutboxBatch blocks, when another heap needs its place,
  /// and at every refill and thread exit (snmalloc's remote cache). So a
  /// thread freeing others' blocks pays one CAS per batch, not per block,
  /// and keeps at most kOutboxSlots * (kOutboxBatch - 1) blocks back.
  void freeToOther(RemoteFreeLayer *owner, void *p) {
    Outbox &o = outbox_[(reinterpret_cast<std::uintptr_t>(owner) >> 6) % kOutboxSlots];
    if (o.owner != owner) {
      send(o);
      o.owner = owner;
    }
    *static_cast<void **>(p) = o.head;
    o.head = p;
    if (!o.tail)
      o.tail = p;
    ++outbox_count_;
    if (++o.count >= kOutboxBatch)
      send(o);
  }

  /// Sends every batch of the outbox (the owner, any time).
  void flushOutbox() {
    for (Outbox &o : outbox_)
      send(o);
  }

  /// Frees every block other threads handed back (the owner, any time).
  void collectRemote() {
    if (!remote_.load(std::memory_order_relaxed))
      return;
    void *p = remote_.exchange(nullptr, std::memory_order_acquire);
    while (p) {
      void *next = *static_cast<void **>(p);
      SlotPage *pg = PageArena::get().spanOf(p);
      this->freeLocal(pg, pg->slotAt(p), "free");
      p = next;
    }
  }

  /// Whether the outbox holds blocks not yet sent.
  bool hasOutbox() const { return outbox_count_ != 0; }

private:
  /// Blocks of one other heap this thread freed, not yet sent.
  struct Outbox {
    RemoteFreeLayer *owner = nullptr;
    void *head = nullptr, *tail = nullptr;
    unsigned count = 0;
  };
  static constexpr unsigned kOutboxSlots = 8, kOutboxBatch = 32;

  void send(Outbox &o) {
    if (o.count) {
      o.owner->receive(o.head, o.tail);
      outbox_count_ -= o.count;
      o.head = o.tail = nullptr;
      o.count = 0;
    }
  }

  Outbox outbox_[kOutboxSlots];
  unsigned outbox_count_ = 0; ///< blocks in the outbox, not yet sent
  alignas(64) std::atomic<void *> remote_{nullptr};
};

} // namespace defero::pages
