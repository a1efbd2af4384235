// container_table.h - ContainerTable: what one thread remembers of the
// containers it inserts into (their open runs, their
// policy), with no lock: the per-thread cache in front of the shared
// policy registry.
//
// Open addressing with linear probing in kSlots entries of metadata memory
// (mapped on the first hint). It never evicts one entry for another: when
// it holds kMaxUsed containers it forgets them all at once. So what a
// container gets never depends on where its address happens to hash (or on
// ASLR): two runs of a program that insert in the same order place their
// nodes the same way.
//
// Cost: a multiply for the hash and, at half load at most, about 1.5
// probes per lookup (Knuth); a forget is one pass over the table, once per
// kMaxUsed new containers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "defero/pages/slot_page.h"

namespace defero::pages {

/// A container's run: slots [lo, hi) of a span, handed out in address
/// order: upwards from `next`, or (a run growing down, for nodes linked
/// before their neighbour: a list's push_front) downwards below `next`.
struct Run {
  SlotPage *span = nullptr;
  std::uint16_t lo = 0, hi = 0, next = 0;
};

/// What a thread remembers of a container: its open runs, and its policy
/// as last read from the registry (valid while `epoch` matches). (Not its
/// last node: a container at a reused address would inherit an earlier
/// container's; a container hint anchors on the thread's last placed node
/// only, LocalHeap::recent_node.)
struct ContainerSlot {
  const void *container = nullptr;
  Run up, down;
  std::int8_t policy = -1; // -1: the process default
  std::uint8_t k = 0;      // 0: the process default
  std::uint8_t runs = 0;   // runs opened so far (each next one is larger)
  std::uint32_t epoch = 0;
};

class ContainerTable {
public:
  static constexpr std::size_t kSlots = std::size_t{1} << 14;
  static constexpr std::size_t kMaxUsed = kSlots / 2;
  static constexpr std::size_t kBytes = kSlots * sizeof(ContainerSlot);

  /// Uses `memory` (kBytes, zeroed) for the table.
  void attach(void *memory) { slots_ = static_cast<ContainerSlot *>(memory); }
  bool ready() const { return slots_ != nullptr; }

  /// The entry of container c, made if new (c may be null: the entry of
  /// "no container").
  ContainerSlot &find(const void *c) {
    if (!c)
      c = &kNoContainer;
    std::size_t i = hash(c);
    for (;; i = (i + 1) & (kSlots - 1)) {
      ContainerSlot &s = slots_[i];
      if (s.container == c)
        return s;
      if (s.container == nullptr)
        break;
    }
    if (used_ >= kMaxUsed) {
      forget();
      i = hash(c);
    }
    ++used_;
    ContainerSlot &s = slots_[i];
    s = ContainerSlot{};
    s.container = c;
    return s;
  }

  /// Forgets every container.
  void forget() {
    if (slots_)
      std::memset(static_cast<void *>(slots_), 0, kBytes);
    used_ = 0;
  }

  std::size_t size() const { return used_; }

private:
  // The key of "no container" (an empty entry's key is null).
  static constexpr char kNoContainer = 0;

  static std::size_t hash(const void *c) {
    const auto key = reinterpret_cast<std::uintptr_t>(c);
    return static_cast<std::size_t>((key >> 3) * 0x9E3779B97F4A7C15ull >> 50);
  }

  ContainerSlot *slots_ = nullptr;
  std::size_t used_ = 0;
};

static_assert(std::size_t{1} << (64 - 50) == ContainerTable::kSlots);

} // namespace defero::pages
