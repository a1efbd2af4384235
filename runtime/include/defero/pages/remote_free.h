// remote_free.h - RemoteFreeLayer: how blocks freed by other threads get
// home (layers.h). Each thread keeps an outbox of the blocks it freed for
// other heaps, one batch per heap: an array of up to kBatchBlocks pointers
// (snmalloc's remote cache, with the pointers out of the blocks). A full
// batch goes to its owner's lock-free list of batches with one CAS; the
// owner takes the list whole with one exchange on its refill path, frees
// every block into its bitmaps, and pushes the empty batch back to the
// thread that filled it. No block is read or written on the way: the owner
// reads a contiguous array instead of chasing a list through blocks that
// another core freed (each link a dependent cache miss: 63% of the refill
// path's time under churn_bench larson x8 before).
//
// A thread with no heap (exiting, or not attached yet) pushes its block
// alone onto the owner's list of single blocks (a Treiber stack through
// the blocks' first words).
//
// Costs: a free of another heap's block, a hash into the outbox and a
// store into the batch; one CAS per kBatchBlocks blocks to send, one to
// give the batch back; the owner's collection, one exchange and a free per
// block.
#pragma once

#include <atomic>
#include <cstdint>

#include "defero/pages/layers.h"
#include "defero/pages/page_arena.h"

namespace defero::pages {

template <SpanSource Super> class RemoteFreeLayer : public Super {
public:
  using Super::Super;

  /// Another thread's free of a block of one of this heap's spans, from a
  /// thread with no heap (no outbox): one CAS.
  void freeRemote(void *p) {
    void *old = remote_.load(std::memory_order_relaxed);
    do
      *static_cast<void **>(p) = old;
    while (!remote_.compare_exchange_weak(old, p, std::memory_order_release,
                                          std::memory_order_relaxed));
  }

  /// This thread frees p, a block of `owner`'s (another heap's): p joins
  /// the batch for that heap in the outbox, which goes over with one CAS
  /// when it holds kBatchBlocks blocks, when another heap needs its place,
  /// and at every refill and thread exit. So a thread freeing others'
  /// blocks pays one CAS per batch, not per block, and keeps at most
  /// kOutboxSlots * (kBatchBlocks - 1) blocks back.
  void freeToOther(RemoteFreeLayer *owner, void *p) {
    Outbox &o = outbox_[(reinterpret_cast<std::uintptr_t>(owner) >> 6) % kOutboxSlots];
    if (o.owner != owner) {
      send(o);
      o.owner = owner;
    }
    RemoteBatch *b = o.batch;
    if (!b) {
      b = newBatch();
      if (__builtin_expect(b == nullptr, 0)) { // no metadata memory left
        owner->freeRemote(p);
        return;
      }
      o.batch = b;
    }
    b->blocks[b->count++] = p;
    ++outbox_count_;
    if (b->count == kBatchBlocks)
      send(o);
  }

  /// Sends every batch of the outbox (the owner, any time).
  void flushOutbox() {
    for (Outbox &o : outbox_)
      send(o);
  }

  /// Frees every block other threads handed back (the owner, any time),
  /// and gives each batch back to the thread that filled it.
  void collectRemote() {
    if (batches_.load(std::memory_order_relaxed)) {
      RemoteBatch *b = batches_.exchange(nullptr, std::memory_order_acquire);
      while (b) {
        RemoteBatch *next = b->next;
        for (std::uint32_t i = 0; i < b->count; ++i)
          freeHome(b->blocks[i]);
        b->sender->giveBack(b);
        b = next;
      }
    }
    if (remote_.load(std::memory_order_relaxed)) {
      void *p = remote_.exchange(nullptr, std::memory_order_acquire);
      while (p) {
        void *next = *static_cast<void **>(p);
        freeHome(p);
        p = next;
      }
    }
  }

  /// Whether the outbox holds blocks not yet sent.
  bool hasOutbox() const { return outbox_count_ != 0; }

  /// Blocks one batch carries (a batch is 256 bytes).
  static constexpr unsigned kBatchBlocks = 29;

private:
  /// Blocks of one heap that another thread freed, on their way home.
  struct RemoteBatch {
    RemoteBatch *next;          ///< the owner's list, or the sender's spares
    RemoteFreeLayer *sender;    ///< the heap whose thread fills it
    std::uint32_t count;
    void *blocks[kBatchBlocks];
  };
  static_assert(sizeof(RemoteBatch) == 256);

  /// The batch of blocks of one other heap this thread freed, not yet sent.
  struct Outbox {
    RemoteFreeLayer *owner = nullptr;
    RemoteBatch *batch = nullptr;
  };
  static constexpr unsigned kOutboxSlots = 8;

  void freeHome(void *p) {
    SlotPage *pg = PageArena::get().spanOf(p);
    const unsigned i = pg->slotAt(p);
    if (__builtin_expect(i == kNoSlot, 0)) { // a gang's block (SpanHeap::gangOf)
      typename Super::Gang g;
      if (!Super::gangOf(pg, p, g))
        os::fatal_pointer("free", p, "pointer is inside a block, not its start");
      this->freeGang(pg, p, g, "free");
      return;
    }
    this->freeLocal(pg, i, "free");
  }

  void send(Outbox &o) {
    if (RemoteBatch *b = o.batch) {
      outbox_count_ -= b->count;
      o.batch = nullptr;
      RemoteBatch *old = o.owner->batches_.load(std::memory_order_relaxed);
      do
        b->next = old;
      while (!o.owner->batches_.compare_exchange_weak(old, b, std::memory_order_release,
                                                      std::memory_order_relaxed));
    }
  }

  /// The owner is done with b: back to its sender's spares (one CAS).
  void giveBack(RemoteBatch *b) {
    RemoteBatch *old = returned_.load(std::memory_order_relaxed);
    do
      b->next = old;
    while (!returned_.compare_exchange_weak(old, b, std::memory_order_release,
                                            std::memory_order_relaxed));
  }

  /// An empty batch: a spare, else the ones owners gave back, else new
  /// metadata memory (never freed: a heap lives as long as the process);
  /// nullptr if there is none.
  RemoteBatch *newBatch() {
    RemoteBatch *b = spare_;
    if (!b && returned_.load(std::memory_order_relaxed))
      b = returned_.exchange(nullptr, std::memory_order_acquire);
    if (!b) {
      b = static_cast<RemoteBatch *>(PageArena::get().meta(sizeof(RemoteBatch), 64));
      if (!b)
        return nullptr;
      b->next = nullptr;
      b->sender = this;
    }
    spare_ = b->next;
    b->next = nullptr;
    b->count = 0;
    return b;
  }

  Outbox outbox_[kOutboxSlots];
  unsigned outbox_count_ = 0; ///< blocks in the outbox, not yet sent
  RemoteBatch *spare_ = nullptr; ///< this thread's empty batches
  alignas(64) std::atomic<RemoteBatch *> batches_{nullptr}; ///< others' batches
  std::atomic<void *> remote_{nullptr};                    ///< others' single blocks
  alignas(64) std::atomic<RemoteBatch *> returned_{nullptr}; ///< batches given back
};

} // namespace defero::pages
