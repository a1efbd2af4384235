//===- DeferoHints.h - the defero-hints pass ----------------------------===//
//
// DESCRIPTION
//   Finds where libstdc++'s node-based containers make a node (in the
//   instantiated libstdc++ functions every insertion goes through) and makes
//   that allocation carry a locality hint into the Defero runtime, through
//   the hint ABI of DESIGN.md. Hint calls go to weak declarations and are
//   guarded, so a program runs the same without the runtime.
//
//   Container functions are recognised by their demangled names (LLVM's
//   ItaniumPartialDemangler): std::__cxx11::list<T, std::allocator<T>>
//   and std::forward_list<T, std::allocator<T>>. Other allocators, and
//   user types that merely share a name, are left alone.
//
// USAGE
//   opt -load-pass-plugin=build/lib/DeferoPlugin.so -passes=defero-hints
//       in.ll -S -o out.ll
//   clang++ -fpass-plugin=build/lib/DeferoPlugin.so ...   (runs it early)
//   clang++ -fplugin=build/lib/DeferoPlugin.so ...        (same, one flag)
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/IR/PassManager.h"

namespace defero {

/// Instruments every container insertion point in M; returns the number of
/// functions changed.
unsigned insertContainerHints(llvm::Module &M);

/// Lowers every annotate("defero.policy", predicate, k) that clang made
/// from [[defero::policy]] into a guarded __defero_container_policy call
/// (locals: after their annotation; fields: before the constructor call;
/// globals: in a constructor of priority 101). Returns the number lowered.
unsigned lowerPolicyAnnotations(llvm::Module &M);

struct DeferoHintsPass : llvm::PassInfoMixin<DeferoHintsPass> {
  llvm::PreservedAnalyses run(llvm::Module &M, llvm::ModuleAnalysisManager &);
  static bool isRequired() { return true; } // also at -O0
};

} // namespace defero
