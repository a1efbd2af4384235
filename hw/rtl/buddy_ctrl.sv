// buddy_ctrl - the buddy allocator's controller: Knuth's binary buddy
// system as a finite-state machine over the header words in buddy_ram, with
// the policy of hw/README.md. FAST = 0 is RBS (a linear search of the free
// lists, the answer when the whole operation is done); FAST = 1 is OBS
// (Fast-Find: the first non-empty list at or above the requested level in
// one cycle, by sklansky_find over the lists' empty flags; Fast-Return: the
// address is answered as soon as it is found and the splitting goes on
// while req_ready_o is low).
//
// Requests: req_free_i = 0: allocate req_arg_i bytes; 1: free the block at
// byte offset req_arg_i. One response per request (resp_valid_o for one
// cycle): status 0 ok (resp_addr_o: the block's byte offset for an
// allocation), 1 out of memory, 2 invalid free.
module buddy_ctrl #(
    parameter int unsigned HEAP_LOG = 20,  // heap of at most 2^HEAP_LOG bytes
    parameter int unsigned MIN_LOG = 4,    // smallest block 2^MIN_LOG bytes
    parameter bit FAST = 1'b0,
    localparam int unsigned UnitBits = HEAP_LOG - MIN_LOG,
    localparam int unsigned Levels = UnitBits + 1,
    localparam int unsigned LevelBits = $clog2(Levels + 1),
    localparam int unsigned AddrBits = UnitBits + 2
) (
    input  logic                 clk_i,
    input  logic                 rst_ni,
    // the heap's size at run time, 2^heap_log_i bytes (MIN_LOG <= heap_log_i
    // <= HEAP_LOG, clamped): read in the first cycle after reset, hold it
    input  logic [6:0]           heap_log_i,
    // request
    input  logic                 req_valid_i,
    output logic                 req_ready_o,
    input  logic                 req_free_i,
    input  logic [63:0]          req_arg_i,
    // response
    output logic                 resp_valid_o,
    output logic [1:0]           resp_status_o,
    output logic [63:0]          resp_addr_o,
    // cycles the last operation spent finding its list
    output logic [31:0]          find_cycles_o,
    // the free lists' empty flags (a head whose LSB is 1 in the paper)
    output logic [Levels-1:0]    empty_o,
    // the heap RAM
    output logic                 ram_req_o,
    output logic                 ram_we_o,
    output logic [AddrBits-1:0]  ram_addr_o,
    output logic [31:0]          ram_wdata_o,
    input  logic                 ram_rvalid_i,
    input  logic [31:0]          ram_rdata_i
);
  localparam logic [31:0] None = 32'hffff_ffff;
  localparam logic [1:0] FieldTag = 2'd0, FieldNext = 2'd1, FieldPrev = 2'd2;
  localparam logic [7:0] TagFree = 8'h80, TagBusy = 8'h40;
  localparam logic [1:0] StOk = 2'd0, StOom = 2'd1, StInvalid = 2'd2;

  typedef enum logic [5:0] {
    InitTag, InitNext, InitPrev, Idle, Find, FastFind, PopRead, PopWait, PopFixPrev, SplitCheck,
    Mark, FreeRead, FreeWait,
    FreeClear, FreeCheck, BuddyRead, BuddyWait, BuddyNextWait, BuddyPrevWait,
    Unlink1, Unlink2, BuddyClear, PushTag, PushNext, PushPrev, PushOldPrev, PushHead
  } state_e;

  state_e state_q;
  logic [31:0] head_q [Levels];     // the free lists' heads (unit numbers)
  logic [LevelBits-1:0] k_q, j_q;   // requested level, level being worked on
  logic [UnitBits-1:0] b_q, buddy_q;
  logic [31:0] next_q, prev_q;
  logic [UnitBits-1:0] pu_q;        // the block being pushed on a list,
  logic [LevelBits-1:0] pl_q;       // its level,
  logic push_split_q;               // and whether a split goes on after it
  logic answered_q;                 // OBS: the allocation was answered early
  logic [31:0] find_q;
  logic [LevelBits-1:0] top_q;      // the root's level: heap_log_i - MIN_LOG

  // The root level heap_log_i asks for, clamped to what the RAM can hold.
  logic [LevelBits-1:0] top_in;
  always_comb begin
    if (heap_log_i >= 7'(HEAP_LOG)) top_in = LevelBits'(UnitBits);
    else if (heap_log_i <= 7'(MIN_LOG)) top_in = '0;
    else top_in = LevelBits'(heap_log_i - 7'(MIN_LOG));
  end

  // --- the requested level: max(0, ceil(log2 bytes) - MIN_LOG) ----------------
  logic [6:0] ceil_log;
  logic [LevelBits-1:0] req_level; // meaningful unless too_big
  logic too_big;
  always_comb begin
    logic [63:0] m;
    m = (req_arg_i == 64'd0) ? 64'd0 : req_arg_i - 64'd1;
    ceil_log = 7'd0;
    for (int unsigned i = 0; i < 64; i++)
      if (m[i]) ceil_log = 7'(i + 1);
    too_big = ceil_log > 7'(top_q) + 7'(MIN_LOG);
    req_level = (ceil_log <= 7'(MIN_LOG)) ? '0 : LevelBits'(ceil_log - 7'(MIN_LOG));
  end

  // --- empty flags, and Fast-Find over them ------------------------------------
  logic [Levels-1:0] usable;
  logic ff_found;
  logic [$clog2(Levels)-1:0] ff_level;
  always_comb begin
    for (int unsigned l = 0; l < Levels; l++) begin
      empty_o[l] = head_q[l] == None;
      usable[l] = !empty_o[l] && (l >= 32'(k_q));
    end
  end
  sklansky_find #(.N(Levels)) u_find (.bits_i(usable), .found_o(ff_found), .index_o(ff_level));

  // --- RAM requests --------------------------------------------------------------
  function automatic logic [31:0] tag_word(input logic [7:0] flags, input logic [5:0] level);
    tag_word = {24'd0, flags | {2'b00, level}};
  endfunction

  function automatic logic [AddrBits-1:0] word(input logic [UnitBits-1:0] unit,
                                               input logic [1:0] field);
    word = {unit, field};
  endfunction

  logic [UnitBits-1:0] head_unit_p, lower;
  assign head_unit_p = head_q[pl_q][UnitBits-1:0];
  assign lower = (b_q < buddy_q) ? b_q : buddy_q;

  always_comb begin
    ram_req_o = 1'b0;
    ram_we_o = 1'b0;
    ram_addr_o = '0;
    ram_wdata_o = '0;
    unique case (state_q)
      // After reset: the whole heap is one free block at unit 0.
      InitTag:      begin ram_req_o = 1'b1; ram_we_o = 1'b1; ram_addr_o = word('0, FieldTag);
                          ram_wdata_o = tag_word(TagFree, 6'(top_in)); end
      InitNext:     begin ram_req_o = 1'b1; ram_we_o = 1'b1; ram_addr_o = word('0, FieldNext);
                          ram_wdata_o = None; end
      InitPrev:     begin ram_req_o = 1'b1; ram_we_o = 1'b1; ram_addr_o = word('0, FieldPrev);
                          ram_wdata_o = None; end
      PopRead:      begin ram_req_o = 1'b1; ram_addr_o = word(b_q, FieldNext); end
      PopFixPrev:   begin ram_req_o = 1'b1; ram_we_o = 1'b1;
                          ram_addr_o = word(next_q[UnitBits-1:0], FieldPrev); ram_wdata_o = None; end
      // Push (pu_q, pl_q) on the head of its list: for a split's upper half
      // and for a freed block, the same four writes.
      PushTag:      begin ram_req_o = 1'b1; ram_we_o = 1'b1; ram_addr_o = word(pu_q, FieldTag);
                          ram_wdata_o = tag_word(TagFree, 6'(pl_q)); end
      PushNext:     begin ram_req_o = 1'b1; ram_we_o = 1'b1; ram_addr_o = word(pu_q, FieldNext);
                          ram_wdata_o = head_q[pl_q]; end
      PushPrev:     begin ram_req_o = 1'b1; ram_we_o = 1'b1; ram_addr_o = word(pu_q, FieldPrev);
                          ram_wdata_o = None; end
      PushOldPrev:  begin ram_req_o = 1'b1; ram_we_o = 1'b1; ram_addr_o = word(head_unit_p, FieldPrev);
                          ram_wdata_o = 32'(pu_q); end
      Mark:         begin ram_req_o = 1'b1; ram_we_o = 1'b1; ram_addr_o = word(b_q, FieldTag);
                          ram_wdata_o = tag_word(TagBusy, 6'(k_q)); end
      FreeRead:     begin ram_req_o = 1'b1; ram_addr_o = word(b_q, FieldTag); end
      FreeClear:    begin ram_req_o = 1'b1; ram_we_o = 1'b1; ram_addr_o = word(b_q, FieldTag); end
      BuddyRead:    begin ram_req_o = 1'b1; ram_addr_o = word(buddy_q, FieldTag); end
      Unlink1:      if (prev_q != None) begin
                      ram_req_o = 1'b1; ram_we_o = 1'b1;
                      ram_addr_o = word(prev_q[UnitBits-1:0], FieldNext); ram_wdata_o = next_q;
                    end
      Unlink2:      if (next_q != None) begin
                      ram_req_o = 1'b1; ram_we_o = 1'b1;
                      ram_addr_o = word(next_q[UnitBits-1:0], FieldPrev); ram_wdata_o = prev_q;
                    end
      BuddyClear:   begin ram_req_o = 1'b1; ram_we_o = 1'b1; ram_addr_o = word(buddy_q, FieldTag); end
      // The buddy's links are read back to back after its tag.
      BuddyWait:    if (ram_rvalid_i && ram_rdata_i == tag_word(TagFree, 6'(k_q))) begin
                      ram_req_o = 1'b1; ram_addr_o = word(buddy_q, FieldNext);
                    end
      BuddyNextWait: if (ram_rvalid_i) begin
                      ram_req_o = 1'b1; ram_addr_o = word(buddy_q, FieldPrev);
                    end
      default: ;
    endcase
  end

  // --- the state machine -----------------------------------------------------------
  assign req_ready_o = state_q == Idle;
  assign find_cycles_o = find_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q <= InitTag;
      for (int unsigned l = 0; l < Levels; l++) head_q[l] <= None;
      top_q <= '0;
      k_q <= '0; j_q <= '0; b_q <= '0; buddy_q <= '0; next_q <= None; prev_q <= None;
      pu_q <= '0; pl_q <= '0; push_split_q <= 1'b0;
      answered_q <= 1'b0; find_q <= '0;
      resp_valid_o <= 1'b0; resp_status_o <= StOk; resp_addr_o <= '0;
    end else begin
      resp_valid_o <= 1'b0;
      unique case (state_q)
        // The whole heap, one free block at unit 0 on the root's list.
        InitTag: begin
          top_q <= top_in;
          head_q[top_in] <= 32'd0;
          state_q <= InitNext;
        end
        InitNext: state_q <= InitPrev;
        InitPrev: state_q <= Idle;
        Idle: if (req_valid_i) begin
          answered_q <= 1'b0;
          find_q <= '0;
          if (!req_free_i) begin
            if (too_big) respond(StOom, '0);
            else begin
              k_q <= req_level;
              j_q <= req_level;
              state_q <= FAST ? FastFind : Find;
            end
          end else if (req_arg_i >= (64'd1 << (7'(top_q) + 7'(MIN_LOG))) ||
                       (req_arg_i & ((64'd1 << MIN_LOG) - 64'd1)) != 64'd0) begin
            respond(StInvalid, '0);
          end else begin
            b_q <= req_arg_i[HEAP_LOG-1:MIN_LOG];
            state_q <= FreeRead;
          end
        end
        // RBS: look at one list per cycle, from the requested level up.
        Find: begin
          find_q <= find_q + 32'd1;
          if (head_q[j_q] != None) begin
            b_q <= head_q[j_q][UnitBits-1:0];
            state_q <= PopRead;
          end else if (j_q == top_q) respond(StOom, '0);
          else j_q <= j_q + 1'b1;
        end
        // OBS: all lists at once; the answer goes out now (Fast-Return).
        FastFind: begin
          find_q <= find_q + 32'd1;
          if (!ff_found) respond(StOom, '0);
          else begin
            j_q <= LevelBits'(ff_level);
            b_q <= head_q[ff_level][UnitBits-1:0];
            answered_q <= 1'b1;
            resp_valid_o <= 1'b1;
            resp_status_o <= StOk;
            resp_addr_o <= 64'(head_q[ff_level][UnitBits-1:0]) << MIN_LOG;
            state_q <= PopRead;
          end
        end
        // Take B off its list: head = B.next; B.next.prev = none.
        PopRead: state_q <= PopWait;
        PopWait: if (ram_rvalid_i) begin
          next_q <= ram_rdata_i;
          head_q[j_q] <= ram_rdata_i;
          state_q <= (ram_rdata_i != None) ? PopFixPrev : SplitCheck;
        end
        PopFixPrev: state_q <= SplitCheck;
        // Split down to the requested level; upper halves to their lists.
        SplitCheck: if (j_q > k_q) begin
          j_q <= j_q - 1'b1;
          pu_q <= b_q + (UnitBits'(1) << (j_q - 1'b1));
          pl_q <= j_q - 1'b1;
          push_split_q <= 1'b1;
          state_q <= PushTag;
        end else state_q <= Mark;
        Mark: begin
          if (!answered_q) respond(StOk, 64'(b_q) << MIN_LOG);
          else state_q <= Idle;
        end
        // Free: B must be an allocated block's start.
        FreeRead: state_q <= FreeWait;
        FreeWait: if (ram_rvalid_i) begin
          if ((ram_rdata_i[7:0] & TagBusy) == 8'd0) respond(StInvalid, '0);
          else begin
            k_q <= ram_rdata_i[LevelBits-1:0];
            state_q <= FreeClear;
          end
        end
        FreeClear: state_q <= FreeCheck;
        FreeCheck: if (k_q == top_q) push(b_q, k_q);
        else begin
          buddy_q <= b_q ^ (UnitBits'(1) << k_q);
          state_q <= BuddyRead;
        end
        BuddyRead: state_q <= BuddyWait;
        BuddyWait: if (ram_rvalid_i) begin
          if (ram_rdata_i == tag_word(TagFree, 6'(k_q))) state_q <= BuddyNextWait;
          else push(b_q, k_q);
        end
        BuddyNextWait: if (ram_rvalid_i) begin
          next_q <= ram_rdata_i;
          state_q <= BuddyPrevWait;
        end
        BuddyPrevWait: if (ram_rvalid_i) begin
          prev_q <= ram_rdata_i;
          state_q <= Unlink1;
        end
        Unlink1: begin
          if (prev_q == None) head_q[k_q] <= next_q;
          state_q <= Unlink2;
        end
        Unlink2: state_q <= BuddyClear;
        BuddyClear: begin
          b_q <= lower;
          k_q <= k_q + 1'b1;
          state_q <= FreeCheck;
        end
        PushTag: state_q <= PushNext;
        PushNext: state_q <= PushPrev;
        PushPrev: state_q <= (head_q[pl_q] != None) ? PushOldPrev : PushHead;
        PushOldPrev: state_q <= PushHead;
        PushHead: begin
          head_q[pl_q] <= 32'(pu_q);
          if (push_split_q) state_q <= SplitCheck;
          else respond(StOk, '0);
        end
        default: state_q <= Idle;
      endcase
    end
  end

  // A freed block (after coalescing) goes on the head of its list.
  task automatic push(input logic [UnitBits-1:0] unit, input logic [LevelBits-1:0] level);
    pu_q <= unit;
    pl_q <= level;
    push_split_q <= 1'b0;
    state_q <= PushTag;
  endtask

  // One response, then back to Idle.
  task automatic respond(input logic [1:0] status, input logic [63:0] addr);
    resp_valid_o <= 1'b1;
    resp_status_o <= status;
    resp_addr_o <= addr;
    state_q <= Idle;
  endtask
endmodule
