//===- DeferoFuse.cpp - fuse a hint with the node's operator new ---------===//
//
// DESCRIPTION
//   See DeferoFuse.h. After defero-hints and inlining, a node allocation
//   typically looks like
//
//     H:  %r = icmp eq ptr @__defero_hint_neighbor, null
//         br i1 %r, label %B, label %T
//     T:  %w = load ptr, ptr %tail
//         call void @__defero_hint_neighbor(ptr %list, ptr %w)
//         br label %B
//     B:  %node = call ptr @_Znwm(i64 24)
//
//   and becomes
//
//     B:  %k = phi i32 [ 1, %T ], [ 0, %H ]          ; only when a hint
//         %w.f = phi ptr [ %w, %T ], [ null, %H ]    ; argument is not
//                                                    ; available in B
//         %fn = select (@__defero_new_hinted != null),
//                      @__defero_new_hinted, @defero.new.fallback
//         %node = call ptr %fn(i64 24, i32 %k, ptr %list, ptr %w.f, i32 0)
//
//   Kind 0 (paths that carried no hint) is an unhinted allocation in the
//   runtime. When every argument is available in B the empty guard is
//   folded away as well.
//===----------------------------------------------------------------------===//
#include "DeferoFuse.h"

#include "defero/abi.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/CFG.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/Module.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"

using namespace llvm;

namespace defero {
namespace {

/// The runtime's kinds (defero/abi.h, __defero_new_hinted).
enum : int {
  kNoHint = DEFERO_HINT_NONE,
  kNeighbor = DEFERO_HINT_NEIGHBOR,
  kTree = DEFERO_HINT_TREE,
  kContainer = DEFERO_HINT_CONTAINER,
};

int hintKind(const Function *F) {
  if (!F)
    return kNoHint;
  const StringRef N = F->getName();
  if (N == DEFERO_FN_HINT_NEIGHBOR && F->arg_size() == 2)
    return kNeighbor;
  if (N == DEFERO_FN_HINT_TREE && F->arg_size() == 3)
    return kTree;
  if (N == DEFERO_FN_HINT_CONTAINER && F->arg_size() == 1)
    return kContainer;
  return kNoHint;
}

const char *kindName(int K) {
  return K == kNeighbor ? "neighbor" : K == kTree ? "tree" : "container";
}

/// `operator new(unsigned long)`: what std::allocator uses for nodes.
bool isPlainNew(const CallBase &CB) {
  const Function *F = CB.getCalledFunction();
  return F && F->getName() == "_Znwm" && CB.arg_size() == 1 &&
         CB.getType()->isPointerTy();
}

/// A plain store into a local variable (an alloca) that no argument of
/// the hint points into. The runtime reads, for a hint, only the memory
/// its arguments lead to (the container object, the nodes' links), so
/// the hint may as well be sent after the store. std::map's
/// _M_emplace_hint_unique stores the tree into its _Auto_node between the
/// container hint and the node's operator new.
bool localStore(const Instruction &I, const CallBase &Hint) {
  const auto *St = dyn_cast<StoreInst>(&I);
  if (!St || !St->isSimple())
    return false;
  const Value *Obj = getUnderlyingObject(St->getPointerOperand());
  if (!isa<AllocaInst>(Obj))
    return false;
  for (const Value *A : Hint.args())
    if (A->getType()->isPointerTy() && getUnderlyingObject(A) == Obj)
      return false;
  return true;
}

/// Instructions allowed between a hint and its operator new: nothing that
/// writes memory (but a local variable's: localStore), may throw, or calls
/// anything but these intrinsics.
bool harmless(const Instruction &I, const CallBase &Hint) {
  if (const auto *II = dyn_cast<IntrinsicInst>(&I))
    return II->isLifetimeStartOrEnd() || isa<DbgInfoIntrinsic>(II) ||
           II->getIntrinsicID() == Intrinsic::assume ||
           !II->mayHaveSideEffects();
  if (isa<CallBase>(I))
    return false;
  return !I.mayHaveSideEffects() || localStore(I, Hint);
}

/// The operator new a hint belongs to: in the hint's block after it, or
/// in the block its unconditional branch goes to. Sets Join to that block
/// in the second case.
CallBase *findNew(CallBase &Hint, BasicBlock *&Join) {
  Join = nullptr;
  unsigned Steps = 0;
  for (Instruction *I = Hint.getNextNode(); I && Steps < 64; ++Steps) {
    if (auto *CB = dyn_cast<CallBase>(I); CB && isPlainNew(*CB))
      return CB;
    if (auto *Br = dyn_cast<BranchInst>(I)) {
      if (Br->isConditional() || Join)
        return nullptr;
      Join = Br->getSuccessor(0);
      I = Join->getFirstNonPHI();
      continue;
    }
    if (I->isTerminator() || !harmless(*I, Hint))
      return nullptr;
    I = I->getNextNode();
  }
  return nullptr;
}

/// What the hints pass computes a hint's arguments with before its guard
/// (loads of the container's links and of the insert side, their
/// arithmetic), which later passes may sink into the guarded block.
bool hoistable(const Instruction &I) {
  if (const auto *L = dyn_cast<LoadInst>(&I))
    return L->isSimple();
  return isa<GetElementPtrInst, CastInst, CmpInst, SelectInst, BinaryOperator>(I) ||
         isa<DbgInfoIntrinsic>(I);
}

/// Moves the computations of a guarded hint's arguments that later passes
/// sank into the hint's block back above its guard (`br (hint entry ==
/// null), Join, Hint`), where the hints pass put them, when the guard and
/// the hint's block are Join's only ways in: the arguments then reach the
/// operator new in Join, so its fused call takes the kind as a constant
/// and the emptied guard folds away (no merge, no branch).
void hoistArguments(CallBase &Hint, BasicBlock *Join) {
  BasicBlock *HintBlock = Hint.getParent();
  BasicBlock *Guard = HintBlock->getSinglePredecessor();
  auto *Br = Guard ? dyn_cast<BranchInst>(Guard->getTerminator()) : nullptr;
  if (!Join || !Br || !Br->isConditional() || pred_size(Join) != 2 ||
      !((Br->getSuccessor(0) == HintBlock && Br->getSuccessor(1) == Join) ||
        (Br->getSuccessor(1) == HintBlock && Br->getSuccessor(0) == Join)))
    return;
  auto *Cmp = dyn_cast<ICmpInst>(Br->getCondition());
  if (!Cmp || !isa<ConstantPointerNull>(Cmp->getOperand(1)) ||
      hintKind(dyn_cast<Function>(Cmp->getOperand(0))) == kNoHint)
    return;
  SmallVector<Instruction *, 8> Moved;
  for (Instruction &I : *HintBlock) {
    if (&I == &Hint)
      break;
    if (!hoistable(I))
      return;
    Moved.push_back(&I);
  }
  for (Instruction *I : Moved)
    I->moveBefore(Br);
}

Function *fallback(Module &M, FunctionType *FTy, Function *New) {
  if (Function *F = M.getFunction("defero.new.fallback"))
    return F;
  Function *F = Function::Create(FTy, GlobalValue::InternalLinkage,
                                 "defero.new.fallback", M);
  IRBuilder<> B(BasicBlock::Create(M.getContext(), "entry", F));
  B.CreateRet(B.CreateCall(New, {F->getArg(0)}));
  return F;
}

/// The callee of F's fused calls, chosen once in its entry block:
/// `select (@__defero_new_hinted != null), @__defero_new_hinted, Fallback`.
/// Chosen at each call instead, the code generator hoists the two
/// addresses out of a loop but repeats the test and the conditional move
/// before every call.
Value *entrySelect(Function &F, Function *Hinted, Function *Fallback) {
  BasicBlock &Entry = F.getEntryBlock();
  for (Instruction &I : Entry)
    if (auto *S = dyn_cast<SelectInst>(&I);
        S && S->getTrueValue() == Hinted && S->getFalseValue() == Fallback)
      return S;
  IRBuilder<> B(&Entry, Entry.getFirstInsertionPt());
  Value *Present = B.CreateICmpNE(
      Hinted, ConstantPointerNull::get(PointerType::getUnqual(F.getContext())),
      "defero.runtime");
  return B.CreateSelect(Present, Hinted, Fallback, "defero.new");
}

/// Folds `P: br %c, T, J` + `T: br J` into `P: br J` when T is empty and J
/// merges nothing that differs between the two edges.
void foldEmptyGuard(BasicBlock *T, BasicBlock *Join) {
  BasicBlock *P = T->getSinglePredecessor();
  auto *Br = P ? dyn_cast<BranchInst>(P->getTerminator()) : nullptr;
  if (!Br || !Br->isConditional() || &T->front() != T->getTerminator())
    return;
  if (!((Br->getSuccessor(0) == T && Br->getSuccessor(1) == Join) ||
        (Br->getSuccessor(1) == T && Br->getSuccessor(0) == Join)))
    return;
  for (PHINode &Phi : Join->phis())
    if (Phi.getIncomingValueForBlock(T) != Phi.getIncomingValueForBlock(P))
      return;
  for (PHINode &Phi : Join->phis())
    Phi.removeIncomingValue(T, false);
  auto *Cond = dyn_cast<Instruction>(Br->getCondition());
  BranchInst::Create(Join, Br->getIterator());
  Br->eraseFromParent();
  if (Cond && Cond->use_empty())
    Cond->eraseFromParent();
  T->eraseFromParent();
  MergeBlockIntoPredecessor(Join);
}

bool fuse(CallBase &Hint, int Kind, OptimizationRemarkEmitter &ORE) {
  BasicBlock *Join = nullptr;
  CallBase *New = findNew(Hint, Join);
  if (!New)
    return false;
  hoistArguments(Hint, Join);
  Function &F = *Hint.getFunction();
  Module &M = *F.getParent();
  LLVMContext &C = M.getContext();
  auto *Ptr = PointerType::getUnqual(C);
  auto *I32 = Type::getInt32Ty(C);
  Type *SizeTy = New->getArgOperand(0)->getType();
  auto *FTy = FunctionType::get(Ptr, {SizeTy, I32, Ptr, Ptr, I32}, false);

  SmallVector<Value *, 5> Args{
      New->getArgOperand(0), ConstantInt::get(I32, Kind), Hint.getArgOperand(0),
      Kind == kContainer ? ConstantPointerNull::get(Ptr) : Hint.getArgOperand(1),
      Kind == kTree ? Hint.getArgOperand(2) : ConstantInt::get(I32, 0)};
  if (Args[4]->getType() != I32)
    return false;

  // Values the hint computed on its own path are merged into the join
  // block; paths that carried no hint pass kind 0.
  BasicBlock *HintBlock = Hint.getParent();
  bool Merged = false;
  if (Join && Join->getSinglePredecessor() != HintBlock) {
    DominatorTree DT(F);
    bool Need = false;
    for (unsigned I = 2; I < Args.size(); ++I)
      if (auto *V = dyn_cast<Instruction>(Args[I]); V && !DT.dominates(V, New))
        Need = true;
    // Paths into the join other than the hint's own and its guard's (where
    // the runtime is absent and the fallback ignores the kind) carried no
    // hint: they must pass kind 0.
    const BasicBlock *Guard = HintBlock->getSinglePredecessor();
    for (const BasicBlock *Pred : predecessors(Join))
      if (Pred != HintBlock && Pred != Guard)
        Need = true;
    if (Need) {
      auto MergeIn = [&](Value *V, Value *Else) -> Value * {
        // At the block's start by iterator, so that debug records stay on
        // the first real instruction (a PHI must carry none).
        PHINode *Phi =
            PHINode::Create(V->getType(), 2, "defero.fuse", Join->begin());
        for (BasicBlock *Pred : predecessors(Join))
          Phi->addIncoming(Pred == HintBlock ? V : Else, Pred);
        return Phi;
      };
      for (unsigned I = 1; I < Args.size(); ++I) {
        auto *V = dyn_cast<Instruction>(Args[I]);
        if (I == 1 || (V && !DT.dominates(V, New)))
          Args[I] = MergeIn(Args[I], Constant::getNullValue(Args[I]->getType()));
      }
      Merged = true;
    }
  }

  IRBuilder<> B(New);
  FunctionCallee Hinted = M.getOrInsertFunction(DEFERO_FN_NEW_HINTED, FTy);
  auto *HintedFn = dyn_cast<Function>(Hinted.getCallee());
  if (!HintedFn || HintedFn->getFunctionType() != FTy)
    return false;
  if (HintedFn->isDeclaration())
    HintedFn->setLinkage(GlobalValue::ExternalWeakLinkage);
  Value *Callee = entrySelect(F, HintedFn, fallback(M, FTy, New->getCalledFunction()));

  CallBase *Fused;
  if (auto *II = dyn_cast<InvokeInst>(New))
    Fused = InvokeInst::Create(FTy, Callee, II->getNormalDest(),
                               II->getUnwindDest(), Args, "", New->getIterator());
  else
    Fused = CallInst::Create(FTy, Callee, Args, "", New->getIterator());
  // What the program may assume of the result (noalias, nonnull,
  // dereferenceable) holds for both callees.
  Fused->setAttributes(AttributeList::get(
      C, AttributeList::ReturnIndex, AttrBuilder(C, New->getAttributes().getRetAttrs())));
  if (auto *Call = dyn_cast<CallInst>(Fused))
    Call->setTailCallKind(cast<CallInst>(New)->getTailCallKind());
  Fused->setDebugLoc(New->getDebugLoc());
  Fused->takeName(New);
  New->replaceAllUsesWith(Fused);
  New->eraseFromParent();
  Hint.eraseFromParent();
  if (Join && !Merged)
    foldEmptyGuard(HintBlock, Join);

  ORE.emit([&] {
    return OptimizationRemark("defero", "FusedAllocation", Fused)
           << kindName(Kind) << " hint fused with operator new";
  });
  return true;
}

} // namespace

PreservedAnalyses DeferoFusePass::run(Module &M, ModuleAnalysisManager &) {
  bool Changed = false;
  for (Function &F : M) {
    if (F.isDeclaration() || F.hasOptNone() || F.getName() == "defero.new.fallback")
      continue;
    SmallVector<std::pair<CallBase *, int>, 4> Hints;
    for (BasicBlock &BB : F)
      for (Instruction &I : BB)
        if (auto *CB = dyn_cast<CallBase>(&I))
          if (int K = hintKind(CB->getCalledFunction());
              K != kNoHint && isa<CallInst>(CB))
            Hints.push_back({CB, K});
    if (Hints.empty())
      continue;
    OptimizationRemarkEmitter ORE(&F);
    for (auto &[CB, K] : Hints)
      Changed |= fuse(*CB, K, ORE);
  }
  return Changed ? PreservedAnalyses::none() : PreservedAnalyses::all();
}

} // namespace defero
