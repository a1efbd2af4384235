//===- DeferoHints.cpp - container locality hints ------------------------===//
//
// DESCRIPTION
//   See DeferoHints.h. Every libstdc++ list insertion makes its node with
//   _M_create_node inside a member function that also has the insertion
//   position as its first argument after `this` (_M_insert, insert,
//   emplace; forward_list's _M_insert_after). Right before that call this
//   pass emits
//
//     __defero_hint_neighbor(this, neighbour)
//
//   where the neighbour is the node the new one will be linked next to:
//   the position's node, or - when the position is the list's own header
//   (push_back: end(); push_front on a forward_list: before_begin()) - the
//   node on the header's other side (the tail; the head). For an empty
//   container that is the header itself, which is not heap memory, and the
//   runtime ignores it. The call is guarded by a null test of the weak
//   declaration, so it costs nothing and changes nothing without the
//   runtime. Because the pass runs before inlining, the hint ends up right
//   before the node's operator new wherever the optimiser moves the code.
//
// USAGE
//   opt -load-pass-plugin=build/lib/DeferoPlugin.so -passes=defero-hints
//===----------------------------------------------------------------------===//
#include "DeferoHints.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"

#include <string>

using namespace llvm;

namespace defero {
namespace {

/// The parts of a demangled C++ function name the pass looks at.
struct CxxName {
  std::string Context; // "std::__cxx11::list<int, std::allocator<int> >"
  std::string Base;    // "_M_insert"
};

bool demangle(StringRef Mangled, CxxName &Out) {
  if (!Mangled.starts_with("_Z"))
    return false;
  // The demangler keeps pointers into its input: it must outlive D's use.
  const std::string Name = Mangled.str();
  ItaniumPartialDemangler D;
  if (D.partialDemangle(Name.c_str())) // true means failure
    return false;
  if (!D.isFunction())
    return false;
  size_t N = 0;
  char *Ctx = D.getFunctionDeclContextName(nullptr, &N);
  char *Base = D.getFunctionBaseName(nullptr, &N);
  if (Ctx && Base) {
    Out.Context = Ctx;
    Out.Base = Base;
  }
  std::free(Ctx);
  std::free(Base);
  return !Out.Base.empty();
}

/// Which container a function belongs to, if it is one we instrument: a
/// libstdc++ container with the standard allocator (a custom allocator may
/// not allocate through malloc at all).
enum class Kind { None, List, ForwardList };

Kind containerOf(const CxxName &N) {
  StringRef Ctx(N.Context);
  const bool StdAlloc = Ctx.contains(", std::allocator<");
  if (!StdAlloc)
    return Kind::None;
  if (Ctx.starts_with("std::__cxx11::list<") &&
      (N.Base == "_M_insert" || N.Base == "insert" || N.Base == "emplace"))
    return Kind::List;
  if (Ctx.starts_with("std::_Fwd_list_base<") && N.Base == "_M_insert_after")
    return Kind::ForwardList;
  return Kind::None;
}

bool isNodeMaker(const CallBase &CB) {
  const Function *Callee = CB.getCalledFunction();
  CxxName N;
  return Callee && demangle(Callee->getName(), N) && N.Base == "_M_create_node";
}

FunctionCallee hintNeighbor(Module &M) {
  LLVMContext &C = M.getContext();
  auto *Ptr = PointerType::getUnqual(C);
  FunctionCallee FC = M.getOrInsertFunction(
      "__defero_hint_neighbor",
      FunctionType::get(Type::getVoidTy(C), {Ptr, Ptr}, false));
  if (auto *F = dyn_cast<Function>(FC.getCallee()); F && F->isDeclaration())
    F->setLinkage(GlobalValue::ExternalWeakLinkage);
  return FC;
}

/// Emits the guarded hint right before the node-making call.
void emitHint(Module &M, CallBase &MakeNode, Kind K) {
  Function &F = *MakeNode.getFunction();
  Value *This = F.getArg(0);
  Value *Pos = F.getArg(1);
  IRBuilder<> B(&MakeNode);
  LLVMContext &C = M.getContext();
  auto *Ptr = PointerType::getUnqual(C);
  // list: the header's _M_prev (offset 8) is the tail; forward_list: the
  // header's _M_next (offset 0) is the head.
  const unsigned Offset = K == Kind::List ? 8 : 0;
  Value *AtHeader = B.CreateICmpEQ(Pos, This, "defero.at_header");
  Value *Other = B.CreateLoad(
      Ptr, B.CreateConstInBoundsGEP1_64(Type::getInt8Ty(C), Pos, Offset),
      "defero.beside_header");
  Value *Neighbour = B.CreateSelect(AtHeader, Other, Pos, "defero.neighbour");
  FunctionCallee Hint = hintNeighbor(M);
  Value *Present = B.CreateICmpNE(
      Hint.getCallee(), ConstantPointerNull::get(Ptr), "defero.runtime");
  Instruction *Then = SplitBlockAndInsertIfThen(Present, &MakeNode, false);
  IRBuilder<> TB(Then);
  TB.CreateCall(Hint, {This, Neighbour});
}

bool instrument(Function &F, Kind K) {
  if (F.isDeclaration() || F.arg_size() < 2 ||
      !F.getArg(0)->getType()->isPointerTy() ||
      !F.getArg(1)->getType()->isPointerTy())
    return false;
  SmallVector<CallBase *, 2> Sites;
  for (BasicBlock &BB : F)
    for (Instruction &I : BB)
      if (auto *CB = dyn_cast<CallBase>(&I); CB && isNodeMaker(*CB))
        Sites.push_back(CB);
  for (CallBase *CB : Sites)
    emitHint(*F.getParent(), *CB, K);
  return !Sites.empty();
}

} // namespace

unsigned insertContainerHints(Module &M) {
  unsigned Changed = 0;
  SmallVector<std::pair<Function *, Kind>, 16> Work;
  for (Function &F : M) {
    CxxName N;
    if (F.isDeclaration() || !demangle(F.getName(), N))
      continue;
    if (Kind K = containerOf(N); K != Kind::None)
      Work.push_back({&F, K});
  }
  for (auto &[F, K] : Work)
    Changed += instrument(*F, K);
  return Changed;
}

PreservedAnalyses DeferoHintsPass::run(Module &M, ModuleAnalysisManager &) {
  return insertContainerHints(M) ? PreservedAnalyses::none()
                                 : PreservedAnalyses::all();
}

} // namespace defero
