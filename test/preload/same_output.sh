#!/usr/bin/env bash
# same_output.sh LIBDEFERO OUTDIR -- compiler args...
# Compiles twice, with the system malloc and under LD_PRELOAD=LIBDEFERO, and
# checks the object files are byte-identical: a large real program (the
# compiler) behaves the same on the Defero heap.
set -euo pipefail
lib=$1 out=$2
shift 2
[[ ${1:-} == -- ]] && shift
mkdir -p "$out"
"$@" -o "$out/system.o"
LD_PRELOAD="$lib" DEFERO_STATS_FILE="$out/stats.json" "$@" -o "$out/defero.o"
cmp "$out/system.o" "$out/defero.o"
grep -q '"allocs": [1-9]' "$out/stats.json" # the compiler really ran on Defero
echo "same object code; compiler stats: $(cat "$out/stats.json")"
