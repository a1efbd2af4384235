// overflow_program - writes past the end of a malloc'd block (argv[1] bytes
// requested, argv[2] bytes written), then frees it. Under
// libdefero-checked.so the free must stop with a one-line report; with
// argv[2] <= argv[1] it must exit 0.
#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: overflow_program REQUEST WRITE\n");
    return 2;
  }
  const std::size_t request = std::strtoul(argv[1], nullptr, 10);
  const std::size_t write = std::strtoul(argv[2], nullptr, 10);
  // volatile: the stores must happen although the block is freed next.
  volatile char *p = static_cast<char *>(std::malloc(request));
  for (std::size_t i = 0; i < write; ++i)
    p[i] = 'x';
  std::free(const_cast<char *>(p));
  std::printf("overflow_program: freed\n");
  return 0;
}
