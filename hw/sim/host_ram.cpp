// host_ram.cpp - HostRam, and the DPI-C functions buddy_ram.sv imports (HOST=1).
#include "host_ram.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace defero::hw {
namespace {
HostRam *selected_ram = nullptr;

[[noreturn]] void die(const char *what, unsigned addr) {
  char msg[200];
  const int n = std::snprintf(msg, sizeof msg, "defero hw: %s (header word %u)\n", what, addr);
  if (n > 0)
    (void)!::write(2, msg, static_cast<std::size_t>(n) < sizeof msg ? n : sizeof msg - 1);
  std::abort();
}
} // namespace

HostRam::~HostRam() { release(); }

void HostRam::release() {
  if (data_)
    ::munmap(data_, words_ * sizeof(std::uint32_t));
  if (selected_ram == this)
    selected_ram = nullptr;
  data_ = nullptr;
  words_ = 0;
}

bool HostRam::reset(std::uint64_t words) {
  release();
  if (!words)
    return false;
  void *p = ::mmap(nullptr, words * sizeof(std::uint32_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    return false;
  data_ = static_cast<std::uint32_t *>(p);
  words_ = words;
  return true;
}

void HostRam::select(HostRam *ram) { selected_ram = ram; }
HostRam *HostRam::selected() { return selected_ram; }

} // namespace defero::hw

// The model's RAM port: an address past the selected RAM is a wiring bug
// (a RAM sized for a smaller heap than the model was told), never data.
extern "C" unsigned defero_hw_ram_read(unsigned addr) {
  using defero::hw::selected_ram;
  if (!selected_ram || addr >= selected_ram->words())
    defero::hw::die(selected_ram ? "a host-RAM model read past its RAM"
                                 : "a host-RAM model ran with no RAM selected",
                    addr);
  return selected_ram->data()[addr];
}

extern "C" void defero_hw_ram_write(unsigned addr, unsigned data) {
  using defero::hw::selected_ram;
  if (!selected_ram || addr >= selected_ram->words())
    defero::hw::die(selected_ram ? "a host-RAM model wrote past its RAM"
                                 : "a host-RAM model ran with no RAM selected",
                    addr);
  selected_ram->data()[addr] = data;
}
