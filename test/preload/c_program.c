// c_program.c - a C program under LD_PRELOAD=libdefero.so: the library must
// bring nothing of the C++ runtime into it (libdefero links against libc
// only). Allocates and frees through the preloaded heap, then reads
// /proc/self/maps: prints "ok: ..." when libdefero is mapped and no
// libstdc++ or libgcc_s is; otherwise names what it found and exits 1.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  enum { kBlocks = 10000 };
  static void *blocks[kBlocks];
  for (int i = 0; i < kBlocks; ++i) {
    blocks[i] = malloc((size_t)(16 + i % 200));
    if (!blocks[i]) {
      printf("malloc failed at %d\n", i);
      return 1;
    }
    memset(blocks[i], i & 0xff, 16);
  }
  for (int i = kBlocks - 1; i >= 0; i -= 2)
    free(blocks[i]);
  for (int i = 0; i < kBlocks; i += 2)
    free(blocks[i]);

  FILE *maps = fopen("/proc/self/maps", "r");
  if (!maps) {
    printf("cannot read /proc/self/maps\n");
    return 1;
  }
  char line[4096];
  int defero = 0, bad = 0;
  while (fgets(line, sizeof line, maps)) {
    if (strstr(line, "/libdefero"))
      defero = 1;
    if (strstr(line, "/libstdc++") || strstr(line, "/libgcc_s")) {
      printf("C++ runtime mapped: %s", line);
      bad = 1;
    }
  }
  fclose(maps);
  if (!defero) {
    printf("libdefero is not mapped (run me with LD_PRELOAD)\n");
    return 1;
  }
  if (bad)
    return 1;
  printf("ok: libdefero mapped, no C++ runtime\n");
  return 0;
}
