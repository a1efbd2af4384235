// buddy_ram - the heap RAM holding the allocator's header words: one port,
// writes take one cycle, a read answers READ_LATENCY cycles later with
// rvalid. Word address {unit, field}: field 0 tag (bit 7 free, bit 6 busy,
// bits 5:0 level), 1 next, 2 prev (32'hffff_ffff: none).
//
// HOST = 0: the words are an array of the model (synthesisable). HOST = 1:
// they live in the simulating host's memory, reached through DPI-C
// (defero_hw_ram_read / defero_hw_ram_write, hw/sim/host_ram.cpp): the
// runtime's models use it, so a large heap's header RAM is a sparse host
// mapping instead of an array the model must clear (simulation only).
module buddy_ram #(
    parameter int unsigned ADDR_BITS = 18,  // at most 32 with HOST = 1
    parameter int unsigned READ_LATENCY = 1,
    parameter int unsigned HOST = 0
) (
    input  logic                 clk_i,
    input  logic                 req_i,
    input  logic                 we_i,
    input  logic [ADDR_BITS-1:0] addr_i,
    input  logic [31:0]          wdata_i,
    output logic                 rvalid_o,
    output logic [31:0]          rdata_o
);
  logic [31:0] word;  // the word at addr_i, now

  if (HOST != 0) begin : g_host
    import "DPI-C" function int unsigned defero_hw_ram_read(input int unsigned addr);
    import "DPI-C" function void defero_hw_ram_write(input int unsigned addr,
                                                     input int unsigned data);
    always_ff @(posedge clk_i) begin
      if (req_i && we_i) defero_hw_ram_write(32'(addr_i), wdata_i);
    end
    // Read only what is asked for (a read has no side effect).
    always_comb word = (req_i && !we_i) ? defero_hw_ram_read(32'(addr_i)) : '0;
  end else begin : g_array
    logic [31:0] mem [2**ADDR_BITS];
    // Header words start as zero: no block starts anywhere until the
    // controller writes the first one.
    initial for (int unsigned i = 0; i < 2**ADDR_BITS; i++) mem[i] = '0;
    always_ff @(posedge clk_i) begin
      if (req_i && we_i) mem[addr_i] <= wdata_i;
    end
    assign word = mem[addr_i];
  end

  // The read pipeline: stage 0 takes the word, the last stage presents it.
  logic [31:0] data_q  [READ_LATENCY];
  logic        valid_q [READ_LATENCY];

  always_ff @(posedge clk_i) begin
    data_q[0]  <= word;
    valid_q[0] <= req_i && !we_i;
    for (int unsigned s = 1; s < READ_LATENCY; s++) begin
      data_q[s]  <= data_q[s-1];
      valid_q[s] <= valid_q[s-1];
    end
  end

  assign rdata_o  = data_q[READ_LATENCY-1];
  assign rvalid_o = valid_q[READ_LATENCY-1];
endmodule
