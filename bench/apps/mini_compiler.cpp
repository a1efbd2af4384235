// mini_compiler - a compiler-like pipeline written the way compilers use
// the STL: each function is a std::list of instructions, names resolve
// through a std::map symbol table, and passes insert and erase
// instructions in the middle of the lists, driven by std::set worklists:
//
//   generate   random straight-line code with constants and copies
//   fold       constant folding (instructions rewritten, operands erased)
//   cse        common subexpressions (a std::map from expression to value)
//   expand     strength reduction that inserts instruction pairs mid-list
//   dce        dead-code elimination from a std::set worklist of uses
//
//   mini_compiler [--functions F] [--instructions I] [--seed S]
//   prints: mini_compiler functions=F time_ms=T checksum=C peak_rss_bytes=R
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <list>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "app_args.h"

namespace {

enum Op : int { Const, Copy, Add, Mul, Shl, Sub, Ret };

struct Instr {
  Op op;
  int dst, a, b; // registers (a, b unused by Const; b unused by Copy, Ret)
  long long imm;
};

using Function = std::list<Instr>;

/// The value number of each register, for cse; constants for fold.
struct Facts {
  std::map<int, long long> constant;
  std::map<std::tuple<int, int, int>, int> expr; // (op, a, b) -> register
};

void generate(Function &f, std::map<std::string, int> &symbols, int count, std::mt19937_64 &rng) {
  int next = 0;
  for (int i = 0; i < count; ++i) {
    const std::string name = "v" + std::to_string(rng() % static_cast<unsigned>(count / 2 + 1));
    auto [it, fresh] = symbols.try_emplace(name, next);
    if (fresh)
      ++next;
    const int src1 = static_cast<int>(rng() % static_cast<unsigned>(next)),
              src2 = static_cast<int>(rng() % static_cast<unsigned>(next));
    const int kind = static_cast<int>(rng() % 10);
    const int dst = next++;
    it->second = dst; // the name now denotes the new value
    if (kind < 3)
      f.push_back({Const, dst, 0, 0, static_cast<long long>(rng() % 64)});
    else if (kind < 4)
      f.push_back({Copy, dst, src1, 0, 0});
    else
      f.push_back({static_cast<Op>(Add + kind % 4), dst, src1, src2, 0});
  }
  f.push_back({Ret, -1, symbols.begin()->second, 0, 0});
}

long long evaluate(Op op, long long a, long long b) {
  switch (op) {
  case Add: return a + b;
  case Mul: return a * b;
  case Shl: return a << (b & 7);
  case Sub: return a - b;
  default: return a;
  }
}

void fold(Function &f, Facts &facts) {
  for (auto it = f.begin(); it != f.end(); ++it) {
    if (it->op == Const) {
      facts.constant[it->dst] = it->imm;
      continue;
    }
    if (it->op == Ret)
      continue;
    auto a = facts.constant.find(it->a), b = facts.constant.find(it->b);
    const bool binary = it->op != Copy;
    if (a != facts.constant.end() && (!binary || b != facts.constant.end())) {
      const long long v = binary ? evaluate(it->op, a->second, b->second) : a->second;
      // Rewrite as a constant: a new node where the old one was.
      const int dst = it->dst;
      it = f.erase(it);
      it = f.insert(it, {Const, dst, 0, 0, v & 0xffffffff});
      facts.constant[dst] = v & 0xffffffff;
    }
  }
}

void cse(Function &f, Facts &facts) {
  for (auto it = f.begin(); it != f.end(); ++it) {
    if (it->op < Add || it->op > Sub)
      continue;
    auto [e, fresh] = facts.expr.try_emplace(std::make_tuple(static_cast<int>(it->op), it->a, it->b),
                                             it->dst);
    if (!fresh) { // the value exists: a copy instead
      const int dst = it->dst;
      it = f.erase(it);
      it = f.insert(it, {Copy, dst, e->second, 0, 0});
    }
  }
}

void expand(Function &f) {
  // x * 2^k becomes a shift; x * c (c small, odd) becomes a shift and an add.
  int scratch = 1 << 28;
  for (auto it = f.begin(); it != f.end(); ++it) {
    if (it->op != Mul || (it->b & 3) != 1)
      continue;
    const Instr m = *it;
    it = f.erase(it);
    f.insert(it, {Shl, scratch, m.a, m.b, 0});
    it = f.insert(it, {Add, m.dst, scratch, m.a, 0});
    ++scratch;
  }
}

std::size_t dce(Function &f) {
  std::set<int> live;
  std::size_t removed = 0;
  // Backwards: an instruction whose result nobody uses goes.
  for (auto it = f.end(); it != f.begin();) {
    --it;
    if (it->op == Ret || live.count(it->dst)) {
      live.erase(it->dst);
      if (it->op != Const) {
        live.insert(it->a);
        if (it->op != Copy && it->op != Ret)
          live.insert(it->b);
      }
    } else {
      it = f.erase(it);
      ++removed;
    }
  }
  return removed;
}

} // namespace

int main(int argc, char **argv) {
  const defero_bench::AppArgs args(argc, argv, "mini_compiler",
                                   {"--functions", "--instructions", "--seed"});
  const long long functions = args.get("--functions", 400, 1, 10000000);
  const int instructions = static_cast<int>(args.get("--instructions", 2000, 2, 1000000));
  std::mt19937_64 rng(static_cast<unsigned long long>(args.get("--seed", 1, 0, 1LL << 62)));

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Function> program(static_cast<std::size_t>(functions));
  std::vector<std::map<std::string, int>> symbols(static_cast<std::size_t>(functions));
  for (std::size_t i = 0; i < program.size(); ++i)
    generate(program[i], symbols[i], instructions, rng);
  std::uint64_t checksum = 0;
  std::size_t removed = 0;
  for (std::size_t i = 0; i < program.size(); ++i) {
    Function &f = program[i];
    for (int round = 0; round < 2; ++round) {
      Facts facts;
      fold(f, facts);
      cse(f, facts);
      expand(f);
      removed += dce(f);
    }
    for (const Instr &in : f)
      checksum = checksum * 1000003u + static_cast<std::uint64_t>(in.op * 131 + in.dst * 7 + in.a * 3 + in.b) +
                 static_cast<std::uint64_t>(in.imm);
    for (const auto &[name, reg] : symbols[i])
      checksum += static_cast<std::uint64_t>(reg) * name.size();
  }
  checksum ^= removed;
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("mini_compiler functions=%lld time_ms=%.1f checksum=%llu peak_rss_bytes=%llu\n", functions, ms,
              static_cast<unsigned long long>(checksum), defero_bench::peakRssBytes());
  return 0;
}
