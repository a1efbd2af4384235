// sklansky_find - the lowest set bit of a vector, by a Sklansky
// parallel-prefix OR (log2 N levels of OR gates, so its delay does not
// depend on which bit is set): the Fast-Find of OBS applies it to the
// non-empty flags of the free lists, masked below the requested level.
module sklansky_find #(
    parameter int unsigned N = 16
) (
    input  logic [N-1:0]         bits_i,
    output logic                 found_o,
    output logic [$clog2(N)-1:0] index_o
);
  localparam int unsigned Levels = (N > 1) ? $clog2(N) : 1;

  // prefix[l][i]: OR of bits_i[i-2^l+1 .. i] grouped Sklansky-style;
  // prefix[Levels][i] = OR of bits_i[0..i].
  logic [N-1:0] prefix [Levels+1];

  always_comb begin
    prefix[0] = bits_i;
    for (int unsigned l = 0; l < Levels; l++) begin
      for (int unsigned i = 0; i < N; i++) begin
        // In each block of 2^(l+1) bits, the upper half takes the OR of
        // the lower half's last bit.
        if (((i >> l) & 1) == 1) prefix[l+1][i] = prefix[l][i] | prefix[l][((i >> l) << l) - 1];
        else                     prefix[l+1][i] = prefix[l][i];
      end
    end
  end

  // The first set bit is where the prefix OR turns from 0 to 1.
  logic [N-1:0] first;
  // One-hot to binary by OR trees: constant depth as well.
  always_comb begin
    first = prefix[Levels] & ~(prefix[Levels] << 1);
    index_o = '0;
    for (int unsigned i = 0; i < N; i++)
      for (int unsigned b = 0; b < $clog2(N); b++)
        if (((i >> b) & 1) == 1) index_o[b] = index_o[b] | first[i];
  end
  assign found_o = prefix[Levels][N-1];
endmodule
