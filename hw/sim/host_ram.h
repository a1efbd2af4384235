// host_ram.h - the host side of buddy_ram.sv with HOST=1: the header words of a
// Verilated allocator built with HOST_RAM=1 live in a sparse anonymous
// mapping (zero until written, pages taken only where headers are), read
// and written by the model through the DPI-C functions defero_hw_ram_read
// and defero_hw_ram_write (host_ram.cpp).
//
// The DPI functions serve the selected RAM: whoever evaluates a host-RAM
// model selects its RAM first (BuddySim does, before every operation).
// Never allocates through malloc (the runtime's backends use it inside
// the process allocator).
#pragma once

#include <cstddef>
#include <cstdint>

namespace defero::hw {

class HostRam {
public:
  HostRam() = default;
  HostRam(const HostRam &) = delete;
  HostRam &operator=(const HostRam &) = delete;
  ~HostRam();

  /// Maps `words` zero words (a model of heap 2^H bytes with smallest
  /// blocks of 2^M bytes addresses 4 << (H - M) of them); false if the
  /// mapping failed. Any earlier mapping is released.
  bool reset(std::uint64_t words);
  std::uint64_t words() const { return words_; }
  std::uint32_t *data() { return data_; }

  /// The RAM the DPI functions serve from now on (nullptr: none).
  static void select(HostRam *ram);
  static HostRam *selected();

private:
  void release();
  std::uint32_t *data_ = nullptr;
  std::uint64_t words_ = 0;
};

} // namespace defero::hw
