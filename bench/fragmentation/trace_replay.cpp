// trace_replay - replays a DEFERO_TRACE file (m/f/r events, see
// runtime/include/defero/heaplayers/utility/trace_heap.h) against this
// process's malloc — whatever allocator is linked or preloaded — and
// reports fragmentation as Johnstone (1997) measures it: the memory the
// allocator needed at its peak over the peak of the bytes the program had
// live, minus one.
//
// The trace is read whole first; then the peak-RSS mark is reset
// (/proc/self/clear_refs) and the replay runs, writing every byte of every
// block it allocates (programs use their memory). Footprint = peak RSS
// during the replay minus the RSS before it.
//
// A forked child's trace (DEFERO_TRACE with %p) begins "# forked from pid
// P": the blocks it frees that it never allocated were its parent's, and
// are skipped (a realloc of one is a malloc); the replay measures what the
// child itself allocated. Other lines starting with '#' are comments.
//
//   trace_replay TRACE
//   prints: trace_replay events=N peak_live_bytes=L peak_footprint_bytes=F fragmentation_pct=P
//           [inherited_frees=I]   (a forked child's trace)
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>
#include <vector>

#include <sys/mman.h>

namespace {

/// The replay's own bookkeeping lives outside malloc (a bump region of its
/// own mapping), so the allocator under test never sees it: memory the
/// loading phase freed cannot later pass for the replay's footprint.
class Region {
public:
  static void *allocate(std::size_t bytes) {
    static char *base = map();
    static std::size_t used = 0;
    used = (used + 63) & ~std::size_t{63};
    if (used + bytes > kBytes) {
      std::fputs("trace_replay: the trace is too large to load\n", stderr);
      std::exit(1);
    }
    void *p = base + used;
    used += bytes;
    return p;
  }

private:
  static constexpr std::size_t kBytes = std::size_t{1} << 36;
  static char *map() {
    void *p = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fputs("trace_replay: cannot map memory to load the trace\n", stderr);
      std::exit(1);
    }
    return static_cast<char *>(p);
  }
};

template <class T> struct RegionAllocator {
  using value_type = T;
  RegionAllocator() = default;
  template <class U> RegionAllocator(const RegionAllocator<U> &) {}
  T *allocate(std::size_t n) { return static_cast<T *>(Region::allocate(n * sizeof(T))); }
  void deallocate(T *, std::size_t) {}
  template <class U> bool operator==(const RegionAllocator<U> &) const { return true; }
};
template <class T> using Vec = std::vector<T, RegionAllocator<T>>;

struct Event {
  char kind;       // 'm', 'f', 'r'
  std::size_t old; // slot freed or resized ('f', 'r')
  std::size_t slot;
  std::size_t size;
};

[[noreturn]] void die(const char *what, const char *detail) {
  std::fprintf(stderr, "trace_replay: %s%s\n", what, detail);
  std::exit(1);
}

/// die() naming a line of the trace: "at FILE:LINE", whatever the path's
/// length (a fixed buffer cut long paths' line numbers off).
[[noreturn]] void dieAt(const char *what, const char *file, long lineno) {
  std::fprintf(stderr, "trace_replay: %s, at %s:%ld\n", what, file, lineno);
  std::exit(1);
}

/// A line of /proc/self/status, in bytes ("VmRSS", "VmHWM").
std::uint64_t statusBytes(const char *key) {
  FILE *f = std::fopen("/proc/self/status", "r");
  if (!f)
    die("cannot read /proc/self/status", "");
  char line[256];
  std::uint64_t kb = 0;
  const std::size_t len = std::strlen(key);
  while (std::fgets(line, sizeof line, f))
    if (!std::strncmp(line, key, len) && line[len] == ':')
      kb = std::strtoull(line + len + 1, nullptr, 10);
  std::fclose(f);
  return kb * 1024;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2)
    die("usage: trace_replay TRACE", "");
  FILE *in = std::fopen(argv[1], "r");
  if (!in) {
    std::fprintf(stderr, "trace_replay: %s: %s\n", argv[1], std::strerror(errno));
    return 1;
  }
  // Trace pointers become slots: an address may be reused by the traced
  // program, each live block is one slot.
  Vec<Event> events;
  std::unordered_map<std::uint64_t, std::size_t, std::hash<std::uint64_t>,
                     std::equal_to<std::uint64_t>,
                     RegionAllocator<std::pair<const std::uint64_t, std::size_t>>>
      live_slot;
  std::size_t slots = 0;
  char line[256];
  long lineno = 0;
  bool forked = false;          // a forked child's trace
  std::size_t inherited = 0;    // its frees of its parent's blocks
  constexpr std::size_t kNone = ~std::size_t{0};
  auto take = [&](std::uint64_t ptr) {
    auto it = live_slot.find(ptr);
    if (it == live_slot.end()) {
      if (forked) {
        ++inherited;
        return kNone;
      }
      dieAt("a free or realloc of a block the trace never allocated", argv[1], lineno);
    }
    const std::size_t s = it->second;
    live_slot.erase(it);
    return s;
  };
  while (std::fgets(line, sizeof line, in)) {
    ++lineno;
    std::uint64_t a = 0, b = 0, size = 0;
    if (line[0] == '#') {
      if (lineno == 1 && !std::strncmp(line, "# forked from pid ", 18))
        forked = true;
    } else if (std::sscanf(line, "m %" SCNx64 " %" SCNu64, &a, &size) == 2) {
      live_slot[a] = slots;
      events.push_back({'m', 0, slots++, static_cast<std::size_t>(size)});
    } else if (std::sscanf(line, "r %" SCNx64 " %" SCNx64 " %" SCNu64, &a, &b, &size) == 3) {
      const std::size_t old = take(a);
      live_slot[b] = slots;
      if (old == kNone) // the parent's block: a malloc here
        events.push_back({'m', 0, slots++, static_cast<std::size_t>(size)});
      else
        events.push_back({'r', old, slots++, static_cast<std::size_t>(size)});
    } else if (std::sscanf(line, "f %" SCNx64, &a) == 1) {
      const std::size_t old = take(a);
      if (old != kNone)
        events.push_back({'f', old, 0, 0});
    } else {
      dieAt("not a trace event (m/f/r)", argv[1], lineno);
    }
  }
  std::fclose(in);
  if (events.empty())
    die("the trace has no events: ", argv[1]);
  live_slot.clear();

  Vec<void *> block(slots, nullptr);
  Vec<std::size_t> bytes(slots, 0);
  // Reset the peak-RSS mark: from here on it measures the replay.
  if (FILE *c = std::fopen("/proc/self/clear_refs", "w")) {
    std::fputs("5", c);
    std::fclose(c);
  }
  const std::uint64_t base = statusBytes("VmRSS");
  std::uint64_t live = 0, peak_live = 0;
  for (const Event &e : events) {
    switch (e.kind) {
    case 'm':
      block[e.slot] = std::malloc(e.size ? e.size : 1);
      if (!block[e.slot])
        die("malloc failed during the replay", "");
      std::memset(block[e.slot], 0xA5, e.size);
      bytes[e.slot] = e.size;
      live += e.size;
      break;
    case 'f':
      std::free(block[e.old]);
      live -= bytes[e.old];
      block[e.old] = nullptr;
      break;
    default: { // 'r'
      void *q = std::realloc(block[e.old], e.size ? e.size : 1);
      if (!q)
        die("realloc failed during the replay", "");
      if (e.size > bytes[e.old])
        std::memset(static_cast<char *>(q) + bytes[e.old], 0x5A, e.size - bytes[e.old]);
      live = live - bytes[e.old] + e.size;
      block[e.old] = nullptr;
      block[e.slot] = q;
      bytes[e.slot] = e.size;
    }
    }
    if (live > peak_live)
      peak_live = live;
  }
  const std::uint64_t hwm = statusBytes("VmHWM");
  const std::uint64_t footprint = hwm > base ? hwm - base : 0;
  const double frag = peak_live ? 100.0 * (static_cast<double>(footprint) / static_cast<double>(peak_live) - 1.0) : 0.0;
  std::printf("trace_replay events=%zu peak_live_bytes=%" PRIu64 " peak_footprint_bytes=%" PRIu64
              " fragmentation_pct=%.1f",
              events.size(), peak_live, footprint, frag);
  if (forked)
    std::printf(" inherited_frees=%zu", inherited);
  std::printf("\n");
  for (std::size_t s = 0; s < slots; ++s)
    std::free(block[s]);
  return 0;
}
