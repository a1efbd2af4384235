// defero-cc: a C program built with the wrapper runs on the Defero heap.
// RUN: %defero_cc -O2 %s -o %t
// RUN: env DEFERO_STATS_FILE=%t.stats %t | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --check-prefix=STATS < %t.stats
// --stl-patch is accepted the same way (C has no containers to hint).
// RUN: %defero_cc --stl-patch -O2 %s -o %t.sp
// RUN: env DEFERO_STATS_FILE=%t.sp.stats %t.sp | FileCheck %s --check-prefix=OUT
// RUN: FileCheck %s --check-prefix=STATS < %t.sp.stats
// OUT: 4950
// STATS: "allocs": {{[1-9][0-9]*}},
#include <stdio.h>
#include <stdlib.h>
int main(void) {
  long *v = malloc(100 * sizeof *v), s = 0;
  for (int i = 0; i < 100; ++i)
    v[i] = i;
  for (int i = 0; i < 100; ++i)
    s += v[i];
  free(v);
  printf("%ld\n", s);
  return 0;
}
