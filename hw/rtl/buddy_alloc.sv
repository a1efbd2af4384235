// buddy_alloc - a hardware buddy allocator: the controller and its heap
// RAM. FAST = 0 is RBS, the reference buddy system (a linear search of the
// free lists, the answer when the whole operation is done); FAST = 1 is
// OBS, the optimised one (Fast-Find and Fast-Return). See buddy_ctrl.sv.
module buddy_alloc #(
    parameter int unsigned FAST = 1,
    parameter int unsigned HEAP_LOG = 20,
    parameter int unsigned MIN_LOG = 4,
    parameter int unsigned RAM_LATENCY = 1,
    parameter int unsigned HOST_RAM = 0,  // 1: the RAM's words live in the host (DPI)
    localparam int unsigned Levels = HEAP_LOG - MIN_LOG + 1
) (
    input  logic              clk_i,
    input  logic              rst_ni,
    input  logic [6:0]        heap_log_i,  // heap of 2^heap_log_i bytes at run time
    input  logic              req_valid_i,
    output logic              req_ready_o,
    input  logic              req_free_i,
    input  logic [63:0]       req_arg_i,
    output logic              resp_valid_o,
    output logic [1:0]        resp_status_o,
    output logic [63:0]       resp_addr_o,
    output logic [31:0]       find_cycles_o,
    output logic [Levels-1:0] empty_o
);
  localparam int unsigned AddrBits = HEAP_LOG - MIN_LOG + 2;
  logic ram_req, ram_we, ram_rvalid;
  logic [AddrBits-1:0] ram_addr;
  logic [31:0] ram_wdata, ram_rdata;

  buddy_ctrl #(.HEAP_LOG(HEAP_LOG), .MIN_LOG(MIN_LOG), .FAST(FAST != 0)) u_ctrl (
      .clk_i, .rst_ni, .heap_log_i, .req_valid_i, .req_ready_o, .req_free_i, .req_arg_i,
      .resp_valid_o, .resp_status_o, .resp_addr_o, .find_cycles_o, .empty_o,
      .ram_req_o(ram_req), .ram_we_o(ram_we), .ram_addr_o(ram_addr),
      .ram_wdata_o(ram_wdata), .ram_rvalid_i(ram_rvalid), .ram_rdata_i(ram_rdata));
  buddy_ram #(.ADDR_BITS(AddrBits), .READ_LATENCY(RAM_LATENCY), .HOST(HOST_RAM)) u_ram (
      .clk_i, .req_i(ram_req), .we_i(ram_we), .addr_i(ram_addr), .wdata_i(ram_wdata),
      .rvalid_o(ram_rvalid), .rdata_o(ram_rdata));
endmodule
