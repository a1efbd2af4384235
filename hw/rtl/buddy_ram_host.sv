// buddy_ram_host - buddy_ram's ports, timing and word layout, with the words
// kept in the simulating host's memory through DPI-C (defero_hw_ram_read /
// defero_hw_ram_write, defined by the host: hw/sim/host_ram.h). The
// runtime's real-time backends use it: a large heap's header RAM is a
// sparse mapping there, zero until written, instead of an array the model
// must clear. Simulation only (the synthesised designs use buddy_ram).
module buddy_ram_host #(
    parameter int unsigned ADDR_BITS = 18,  // at most 32
    parameter int unsigned READ_LATENCY = 1
) (
    input  logic                 clk_i,
    input  logic                 req_i,
    input  logic                 we_i,
    input  logic [ADDR_BITS-1:0] addr_i,
    input  logic [31:0]          wdata_i,
    output logic                 rvalid_o,
    output logic [31:0]          rdata_o
);
  import "DPI-C" function int unsigned defero_hw_ram_read(input int unsigned addr);
  import "DPI-C" function void defero_hw_ram_write(input int unsigned addr,
                                                   input int unsigned data);

  logic [31:0] data_q  [READ_LATENCY];
  logic        valid_q [READ_LATENCY];

  always_ff @(posedge clk_i) begin
    if (req_i && we_i) defero_hw_ram_write(32'(addr_i), wdata_i);
    if (req_i && !we_i) data_q[0] <= defero_hw_ram_read(32'(addr_i));
    valid_q[0] <= req_i && !we_i;
    for (int unsigned s = 1; s < READ_LATENCY; s++) begin
      data_q[s]  <= data_q[s-1];
      valid_q[s] <= valid_q[s-1];
    end
  end

  assign rdata_o  = data_q[READ_LATENCY-1];
  assign rvalid_o = valid_q[READ_LATENCY-1];
endmodule
