// buddy_sim.h - drives a Verilated buddy allocator (RBS or OBS) cycle by
// cycle: one operation at a time through its ready/valid handshake, with
// the cycles it took.
#pragma once

#include <cstdint>
#include <memory>

#include <verilated.h>

#include "host_ram.h"
#ifdef DEFERO_HW_TRACE
#include <cstdio>
#include <cstdlib>
#include <verilated_vcd_c.h>
#endif

namespace defero::hw {

enum class Status { Ok = 0, OutOfMemory = 1, InvalidFree = 2 };

struct OpResult {
  Status status = Status::Ok;
  std::uint64_t addr = 0;      // the block's byte offset (allocations)
  std::uint64_t wait = 0;      // cycles the request waited for req_ready
  std::uint64_t latency = 0;   // cycles from acceptance to the response
  std::uint32_t find = 0;      // cycles spent finding the list (the RTL's count)
};

template <class Model> class BuddySim {
public:
  /// A model whose heap is 2^heap_log bytes (at most its HEAP_LOG). A model
  /// Verilated with HOST_RAM=1 needs `ram`, sized for that heap (HostRam::
  /// reset(4 << (heap_log - MIN_LOG))): it is selected before every
  /// evaluation.
  explicit BuddySim(unsigned heap_log, HostRam *ram = nullptr)
      : ram_(ram), ctx_(std::make_unique<VerilatedContext>()),
        m_(std::make_unique<Model>(ctx_.get())) {
    select();
#ifdef DEFERO_HW_TRACE
    // A build with -DDEFERO_HW_TRACE=ON records every cycle to the file
    // DEFERO_HW_VCD names (one model at a time).
    if (const char *path = std::getenv("DEFERO_HW_VCD")) {
      ctx_->traceEverOn(true);
      vcd_ = std::make_unique<VerilatedVcdC>();
      m_->trace(vcd_.get(), 99);
      vcd_->open(path);
      if (!vcd_->isOpen()) {
        std::fprintf(stderr, "buddy_sim: DEFERO_HW_VCD=%s: cannot write that file\n", path);
        std::exit(2);
      }
    }
#endif
    m_->clk_i = 0;
    m_->heap_log_i = static_cast<std::uint8_t>(heap_log); // [6:0]
    m_->rst_ni = 0;
    m_->req_valid_i = 0;
    m_->eval();
    tick();
    m_->rst_ni = 1;
    tick();
    while (!m_->req_ready_o) // the controller writes the root block's header
      tick();
  }
  ~BuddySim() {
    m_->final();
#ifdef DEFERO_HW_TRACE
    if (vcd_)
      vcd_->close();
#endif
  }

  OpResult alloc(std::uint64_t bytes) { return op(false, bytes); }
  OpResult free(std::uint64_t offset) { return op(true, offset); }

  /// Cycles until the allocator is ready again (OBS: the Block time after a
  /// Fast-Return).
  std::uint64_t settle() {
    select();
    std::uint64_t n = 0;
    while (!m_->req_ready_o) {
      tick();
      ++n;
    }
    return n;
  }
  bool ready() const { return m_->req_ready_o; }
  std::uint64_t cycles() const { return cycles_; }
  /// Bit l set: free list l is empty.
  std::uint64_t emptyFlags() const { return static_cast<std::uint64_t>(m_->empty_o); }

private:
  void select() {
    if (ram_)
      HostRam::select(ram_);
  }
  void tick() {
    m_->clk_i = 1;
    m_->eval();
    dump(2 * cycles_ + 1);
    m_->clk_i = 0;
    m_->eval();
    dump(2 * cycles_ + 2);
    ++cycles_;
  }
  void dump([[maybe_unused]] std::uint64_t t) {
#ifdef DEFERO_HW_TRACE
    if (vcd_)
      vcd_->dump(t);
#endif
  }

  // Raises req_valid at once (even while the allocator is busy) and holds it
  // until an edge with req_ready accepts it.
  OpResult op(bool free, std::uint64_t arg) {
    OpResult r;
    select();
    m_->req_free_i = free;
    m_->req_arg_i = arg;
    m_->req_valid_i = 1;
    for (;;) {
      m_->eval();
      const bool accepted = m_->req_ready_o;
      tick();
      if (accepted)
        break;
      ++r.wait;
    }
    m_->req_valid_i = 0;
    r.latency = 1;
    while (!m_->resp_valid_o) {
      tick();
      ++r.latency;
    }
    r.status = static_cast<Status>(m_->resp_status_o);
    r.addr = m_->resp_addr_o;
    r.find = m_->find_cycles_o;
    return r;
  }

  HostRam *ram_;
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Model> m_;
#ifdef DEFERO_HW_TRACE
  std::unique_ptr<VerilatedVcdC> vcd_;
#endif
  std::uint64_t cycles_ = 0;
};

} // namespace defero::hw
