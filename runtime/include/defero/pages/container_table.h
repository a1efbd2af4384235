// container_table.h - ContainerTable: what one thread remembers of the
// containers it inserts into (their open runs, their
// policy), with no lock: the per-thread cache in front of the shared
// policy registry.
//
// Open addressing with linear probing, in its own mapping (made on the
// first hint). At half load it doubles and rehashes, up to kMaxSlots; a
// thread that has inserted into more than kMaxSlots / 2 containers forgets
// them all at once (the pages are given back: no pass over the table, and
// the entries are faulted in again as containers come back). It never
// evicts one entry for another, so what a container gets never depends on
// where its address happens to hash (or on ASLR): two runs of a program
// that insert in the same order place their nodes the same way.
//
// Sizes, measured on debruijn_net's 65,536 lists: a table that kept them
// all (2^18 entries, 14 MiB touched) doubled the program's peak RSS for 4%
// of its time; forgetting at 8,192 with a memset of the table cost 4.9% of
// its instructions; forgetting by giving the pages back costs neither
// (1127 ms, 17.9 MiB, against 1199 ms with the memset and 1164 ms, 35.6
// MiB, keeping all). At 2^13 entries (forgetting at 4,096) the table
// touches 384 KiB instead of 768: debruijn_net_plugin's peak RSS 16.5 ->
// 16.2 MB, for 0.3% more of its instructions (more containers start
// afresh). (384 KiB: entries of 48 bytes then; of 64 now, a line each
// with a tree's zones' array: 512 KiB at 2^13, debruijn_net_plugin's peak
// RSS 15.3-15.4 MB with 56-byte entries and with these.) At 2^12 entries
// (forgetting at 2,048) it touches 256 KiB: debruijn_net_plugin's peak RSS
// 15.68-15.76 -> 15.43-15.51 MB (three runs each, glibc's 13.4), for
// +0.015% of its instructions (callgrind), +0.007% of mini_compiler's and
// md_cells'.
//
// Cost: a multiply for the hash and, at half load at most, about 1.5
// probes per lookup (Knuth); a growth is one pass over the table, after as
// many new containers as it held. A container found at its first probe
// costs about 12 instructions inline (find); the rest is out of line
// (findOrAdd), whose six saved registers cost a set's insert off the fast
// path about 23 instructions a lookup when they framed every lookup.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "defero/pages/slot_page.h"
#include "defero/platform/os.h"

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
/// only, LocalHeap::recent.)
struct ContainerSlot {
  const void *container = nullptr;
  Run up, down;
  std::int8_t policy = -1; // -1: the process default
  std::uint8_t k = 0;      // 0: the process default
  std::uint8_t runs = 0;   // runs opened so far (each next one is larger)
  std::uint32_t epoch = 0;
  std::uint8_t depth = 0;  // a tree's deepest insert seen off the fast path
  std::uint8_t cell = 0;   // its runs began with a list's cell (takeCell)
  /// A tree's zones' entries (ContainerTable::zones), null until its
  /// first node placed in a zone.
  ContainerSlot *zones = nullptr;
};
static_assert(sizeof(ContainerSlot) == 64, "an entry a cache line");

class ContainerTable {
public:
  static constexpr unsigned kFirstBits = 11, kMaxBits = 12;
  static constexpr std::size_t kMaxSlots = std::size_t{1} << kMaxBits;

  ContainerTable() = default;
  ContainerTable(const ContainerTable &) = delete;
  ContainerTable &operator=(const ContainerTable &) = delete;
  // (No destructor: a thread's heap, and its table, live as long as the
  // process.)

  /// Maps the table if it has no memory yet; false if it cannot.
  bool ready() {
    return slots_ != nullptr || resize(kFirstBits);
  }

  /// The entry of container c, made if new (c may be null: the entry of
  /// "no container"). The table must be ready(); an entry stays where it
  /// is until the table grows or forgets: a lookup that adds an entry
  /// moves no other.
  ContainerSlot &find(const void *c) {
    // A container found at its first probe (the common case) costs the
    // hash, a load and a compare, inline; the rest goes out of line, so
    // that its registers cost nothing here.
    if (__builtin_expect(c != nullptr, 1)) {
      ContainerSlot &s = slots_[hash(c)];
      if (__builtin_expect(s.container == c, 1))
        return s;
    }
    return findOrAdd(c);
  }

  /// find's slow path: a container past its first probe, or new.
  __attribute__((noinline)) ContainerSlot &findOrAdd(const void *c) {
    if (!c)
      c = &kNoContainer;
    std::size_t i = probe(c);
    if (slots_[i].container == c)
      return slots_[i];
    if (2 * (used_ + 1) > slots()) {
      if (bits_ < kMaxBits && resize(bits_ + 1)) {
        i = probe(c);
      } else { // a thread with kMaxSlots / 2 containers: start afresh
        forget();
        i = hash(c);
      }
    }
    ++used_;
    ContainerSlot &s = slots_[i];
    s = ContainerSlot{};
    s.container = c;
    return s;
  }

  /// Forgets every container.
  void forget() {
    if (slots_) // (zero pages again: no pass over the table)
      os::discard(slots_, slots() * sizeof(ContainerSlot));
    // The zones' arrays, forgotten with their trees, are kept for the
    // next ones (zeroed: their pages given back).
    while (ContainerSlot *z = zones_used_) {
      zones_used_ = nextZones(z);
      os::discard(z, kZoneSlots * sizeof(ContainerSlot));
      nextZones(z) = zones_free_;
      zones_free_ = z;
    }
    used_ = 0;
  }

  /// Entries a tree's zones take: zone `prefix` of a tree with `bits`
  /// zone bits (1..10) is entry (1 << bits) | prefix (entries 0 and 1 are
  /// none: the first links the arrays).
  static constexpr unsigned kZoneSlots = 2048;
  /// The zones' entries of tree entry t (kZoneSlots, zeroed when new: a
  /// zone entry holds its runs only), made on its first call; nullptr if
  /// there is no memory. An array of its own, not entries of the table: a
  /// zone's entry is an index away (not a hash and a probe), and a large
  /// tree's 510 zones take no room in the table. They go when the table
  /// forgets its entries (forget), to serve the next trees.
  ContainerSlot *zones(ContainerSlot &t) {
    if (__builtin_expect(t.zones != nullptr, 1))
      return t.zones;
    ContainerSlot *z = zones_free_;
    if (z) {
      zones_free_ = nextZones(z);
      nextZones(z) = nullptr;
    } else if (!(z = static_cast<ContainerSlot *>(os::map(kZoneSlots * sizeof(ContainerSlot))))) {
      return nullptr;
    }
    nextZones(z) = zones_used_;
    zones_used_ = z;
    return t.zones = z;
  }

  std::size_t size() const { return used_; }
  std::size_t slots() const { return std::size_t{1} << bits_; }

private:
  // The key of "no container" (an empty entry's key is null).
  static constexpr char kNoContainer = 0;

  std::size_t hash(const void *c) const {
    const auto key = reinterpret_cast<std::uintptr_t>(c);
    return static_cast<std::size_t>((key >> 3) * 0x9E3779B97F4A7C15ull >> (64 - bits_));
  }
  /// c's entry, or the empty one where it would go.
  std::size_t probe(const void *c) const {
    const std::size_t mask = slots() - 1;
    std::size_t i = hash(c);
    while (slots_[i].container != c && slots_[i].container != nullptr)
      i = (i + 1) & mask;
    return i;
  }

  /// Moves the entries into a new mapping of 2^bits slots.
  bool resize(unsigned bits) {
    void *m = os::map((std::size_t{1} << bits) * sizeof(ContainerSlot));
    if (!m)
      return false;
    ContainerSlot *old = slots_;
    const std::size_t old_slots = old ? slots() : 0;
    slots_ = static_cast<ContainerSlot *>(m);
    bits_ = bits;
    for (std::size_t j = 0; j < old_slots; ++j)
      if (old[j].container)
        slots_[probe(old[j].container)] = old[j];
    if (old)
      os::unmap(old, old_slots * sizeof(ContainerSlot));
    return true;
  }

  /// The link of a zones' array to the next on its list (its entry 0).
  static ContainerSlot *&nextZones(ContainerSlot *z) { return z[0].zones; }

  ContainerSlot *slots_ = nullptr;
  /// Zones' arrays given to trees, and arrays forgotten with theirs.
  ContainerSlot *zones_used_ = nullptr, *zones_free_ = nullptr;
  unsigned bits_ = kFirstBits;
  std::size_t used_ = 0;
};

} // namespace defero::pages
