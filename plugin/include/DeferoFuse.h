//===- DeferoFuse.h - the defero-fuse pass ------------------------------===//
//
// DESCRIPTION
//   The late part of the plugin. After inlining, the guarded one-shot hint
//   that defero-hints put before a node's allocation usually sits a few
//   instructions above the node's `operator new(size)`. This pass fuses
//   the two into one call of the runtime's
//
//     void *__defero_new_hinted(size_t size, int kind, const void *container,
//                               const void *where, int side);
//
//   (kind 1 neighbor, 2 tree, 3 container), so the hint travels as
//   arguments instead of through thread-local state. The call goes through
//   `select(__defero_new_hinted != null, __defero_new_hinted,
//   defero.new.fallback)`, where the fallback (defined here, internal) is a
//   plain `operator new(size)`: without the runtime the program allocates
//   exactly as before. A hint is fused only when nothing between it and
//   the `operator new` can write memory, throw or call anything; every
//   other hint stays a one-shot hint and still works.
//
// USAGE
//   opt -load-pass-plugin=build/lib/DeferoPlugin.so
//       -passes='defero-hints,default<O2>,defero-fuse'
//   clang: runs at the end of the optimisation pipeline (-O1 and up).
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/IR/PassManager.h"

namespace defero {

struct DeferoFusePass : llvm::PassInfoMixin<DeferoFusePass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
};

} // namespace defero
