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

#include "defero/abi.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/ModuleUtils.h"

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

/// The last template argument of a demangled class name
/// ("std::__cxx11::list<int, std::allocator<int>>" -> "std::allocator<int>").
StringRef lastTemplateArg(StringRef Ctx) {
  if (!Ctx.ends_with(">"))
    return {};
  int Depth = 0;
  for (size_t I = Ctx.size(); I-- > 0;) {
    const char C = Ctx[I];
    if (C == '>')
      ++Depth;
    else if (C == '<' && --Depth == 0)
      return Ctx.substr(I + 1, Ctx.size() - I - 2).trim();
    else if (C == ',' && Depth == 1)
      return Ctx.substr(I + 1, Ctx.size() - I - 2).trim();
  }
  return {};
}

/// Which container a function belongs to, if it is one we instrument: a
/// libstdc++ container whose allocator is the standard one (a custom
/// allocator may not allocate through malloc at all).
enum class Kind { None, List, ForwardList, ForwardListInit, TreeInsert, TreeEmplace, HashNode };

Kind containerOf(const CxxName &N) {
  StringRef Ctx(N.Context);
  if (!lastTemplateArg(Ctx).starts_with("std::allocator<"))
    return Kind::None;
  if (Ctx.starts_with("std::__cxx11::list<") &&
      (N.Base == "_M_insert" || N.Base == "insert" || N.Base == "emplace"))
    return Kind::List;
  if (Ctx.starts_with("std::_Fwd_list_base<") && N.Base == "_M_insert_after")
    return Kind::ForwardList;
  // forward_list's constructors - and through a temporary list,
  // insert_after(pos, n, v), insert_after(pos, first, last) and assign -
  // link each new node after the previous one in a loop of their own.
  if (Ctx.starts_with("std::forward_list<") &&
      (N.Base == "_M_fill_initialize" || N.Base == "_M_range_initialize" ||
       N.Base == "_M_default_initialize"))
    return Kind::ForwardListInit;
  // Every node of the unordered containers is allocated by their
  // allocator base, _Hashtable_alloc::_M_allocate_node, whatever the
  // operation (insert, emplace, operator[], try_emplace; a reusing
  // assignment calls it only for the nodes it must add).
  if (Ctx.starts_with("std::__detail::_Hashtable_alloc<") &&
      N.Base == "_M_allocate_node")
    return Kind::HashNode;
  if (Ctx.starts_with("std::_Rb_tree<")) {
    // The position is known before the node is made.
    if (N.Base == "_M_insert_" || N.Base == "_M_insert_lower")
      return Kind::TreeInsert;
    // The node is made first (emplace, operator[], try_emplace,
    // insert_or_assign all come here).
    if (N.Base == "_M_emplace_unique" || N.Base == "_M_emplace_equal" ||
        N.Base == "_M_emplace_hint_unique" || N.Base == "_M_emplace_hint_equal")
      return Kind::TreeEmplace;
  }
  return Kind::None;
}

/// A call that makes a container node: _M_create_node, a red-black tree's
/// _Auto_node holder, or its _Alloc_node functor (not _Reuse_or_alloc_node, which may hand
/// back an old node without allocating - a hint would then wait for an
/// unrelated allocation).
bool isNodeMaker(const CallBase &CB) {
  const Function *Callee = CB.getCalledFunction();
  CxxName N;
  if (!Callee || !demangle(Callee->getName(), N))
    return false;
  StringRef Ctx(N.Context);
  return N.Base == "_M_create_node" ||
         (N.Base == "operator()" && Ctx.ends_with("::_Alloc_node")) ||
         // libstdc++ 12's emplace functions make the node in the
         // constructor of their RAII holder, _Rb_tree::_Auto_node.
         (N.Base == "_Auto_node" && Ctx.ends_with("::_Auto_node"));
}

/// Declares a hint entry of the runtime: weak, so the program links and
/// runs without it.
FunctionCallee hintFunction(Module &M, StringRef Name, ArrayRef<Type *> Params) {
  LLVMContext &C = M.getContext();
  FunctionCallee FC = M.getOrInsertFunction(
      Name, FunctionType::get(Type::getVoidTy(C), Params, false));
  if (auto *F = dyn_cast<Function>(FC.getCallee()); F && F->isDeclaration()) {
    F->setLinkage(GlobalValue::ExternalWeakLinkage);
    // The runtime's hint entries never throw (defero.h): inlined into a
    // try region they stay calls, not invokes.
    F->setDoesNotThrow();
  }
  return FC;
}

/// Calls Hint(Args) before IP if the runtime is there.
void emitGuardedCall(FunctionCallee Hint, ArrayRef<Value *> Args,
                     Instruction *IP) {
  IRBuilder<> B(IP);
  auto *Ptr = PointerType::getUnqual(IP->getContext());
  Value *Present = B.CreateICmpNE(Hint.getCallee(),
                                  ConstantPointerNull::get(Ptr), "defero.runtime");
  Instruction *Then = SplitBlockAndInsertIfThen(Present, IP, false);
  IRBuilder<>(Then).CreateCall(Hint, Args);
}

FunctionCallee hintNeighbor(Module &M) {
  auto *Ptr = PointerType::getUnqual(M.getContext());
  return hintFunction(M, DEFERO_FN_HINT_NEIGHBOR, {Ptr, Ptr});
}

/// list / forward_list: the guarded neighbour hint right before the
/// node-making call.
void emitNeighbourHint(Module &M, CallBase &MakeNode, Kind K) {
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
  emitGuardedCall(hintNeighbor(M), {This, Neighbour}, &MakeNode);
}

/// The node is made before its position is known: the container hint.
void emitContainerHint(Module &M, CallBase &MakeNode) {
  auto *Ptr = PointerType::getUnqual(M.getContext());
  emitGuardedCall(hintFunction(M, DEFERO_FN_HINT_CONTAINER, {Ptr}),
                  {MakeNode.getFunction()->getArg(0)}, &MakeNode);
}

/// forward_list's initialising loops: `__to->_M_next = _M_create_node(..)`.
/// The neighbour is the node in `__to`, a local variable (the pass runs
/// before SROA): the store of the new node goes through a load of it. That
/// variable is read again right before the node is made. If the code has
/// another shape, the node gets a container hint (the runtime then places
/// it next to the container's previous node, which is the same node here).
void emitForwardListInitHint(Module &M, CallBase &MakeNode) {
  AllocaInst *Tail = nullptr;
  for (User *U : MakeNode.users()) {
    auto *St = dyn_cast<StoreInst>(U);
    if (!St || St->getValueOperand() != &MakeNode)
      continue;
    const DataLayout &DL = M.getDataLayout();
    APInt Offset(DL.getIndexTypeSizeInBits(St->getPointerOperandType()), 0);
    Value *Base = St->getPointerOperand()->stripAndAccumulateInBoundsConstantOffsets(DL, Offset);
    if (auto *L = dyn_cast<LoadInst>(Base); L && Offset.isZero())
      Tail = dyn_cast<AllocaInst>(L->getPointerOperand());
  }
  if (!Tail || !Tail->getAllocatedType()->isPointerTy()) {
    emitContainerHint(M, MakeNode);
    return;
  }
  IRBuilder<> B(&MakeNode);
  auto *Ptr = PointerType::getUnqual(M.getContext());
  Value *Neighbour = B.CreateLoad(Ptr, Tail, "defero.previous");
  emitGuardedCall(hintNeighbor(M), {MakeNode.getFunction()->getArg(0), Neighbour},
                  &MakeNode);
}

/// The variable holding `__insert_left` in _M_insert_ / _M_insert_lower:
/// the alloca whose value the call of _Rb_tree_insert_and_rebalance takes
/// as its first argument. The pass runs before SROA, so clang's locals are
/// still allocas, and the variable is stored before the node is made.
AllocaInst *insertLeftVariable(Function &F) {
  for (BasicBlock &BB : F)
    for (Instruction &I : BB) {
      auto *CB = dyn_cast<CallBase>(&I);
      const Function *Callee = CB ? CB->getCalledFunction() : nullptr;
      if (!Callee || Callee->getName() !=
                         "_ZSt29_Rb_tree_insert_and_rebalancebPSt18_Rb_tree_node_baseS0_RS_")
        continue;
      Value *V = CB->getArgOperand(0);
      if (auto *T = dyn_cast<TruncInst>(V))
        V = T->getOperand(0);
      if (auto *L = dyn_cast<LoadInst>(V))
        return dyn_cast<AllocaInst>(L->getPointerOperand());
      return nullptr;
    }
  return nullptr;
}

/// Red-black tree insertion with a known position: the guarded tree hint
/// (parent, side) right before the node is made.
bool emitTreeHint(Module &M, CallBase &MakeNode, const CxxName &N) {
  Function &F = *MakeNode.getFunction();
  AllocaInst *InsertLeft = insertLeftVariable(F);
  // _M_insert_(x, p, v, gen): the parent is p; _M_insert_lower(p, v).
  const unsigned ParentArg = N.Base == "_M_insert_" ? 2 : 1;
  if (!InsertLeft || F.arg_size() <= ParentArg ||
      !F.getArg(ParentArg)->getType()->isPointerTy())
    return false;
  LLVMContext &C = M.getContext();
  IRBuilder<> B(&MakeNode);
  Value *Left = B.CreateZExt(
      B.CreateICmpNE(B.CreateLoad(InsertLeft->getAllocatedType(), InsertLeft),
                     ConstantInt::get(InsertLeft->getAllocatedType(), 0)),
      Type::getInt32Ty(C), "defero.insert_left");
  auto *Ptr = PointerType::getUnqual(C);
  FunctionCallee Hint = hintFunction(M, DEFERO_FN_HINT_TREE,
                                     {Ptr, Ptr, Type::getInt32Ty(C)});
  emitGuardedCall(Hint, {F.getArg(0), F.getArg(ParentArg), Left}, &MakeNode);
  return true;
}


/// Whether F already sends hints: compiled against stl-patch's headers, its
/// node allocation calls Defero's helpers (or the ABI) itself.
bool alreadyHinted(const Function &F) {
  for (const BasicBlock &BB : F)
    for (const Instruction &I : BB)
      if (const auto *CB = dyn_cast<CallBase>(&I))
        if (const Function *Callee = CB->getCalledFunction()) {
          const StringRef Name = Callee->getName();
          if (Name.starts_with("__defero_hint_") || Name.starts_with("_ZN8__defero"))
            return true;
        }
  return false;
}

bool instrument(Function &F, Kind K, const CxxName &N) {
  if (alreadyHinted(F))
    return false;
  const unsigned NeedArgs =
      K == Kind::TreeEmplace || K == Kind::HashNode || K == Kind::ForwardListInit ? 1 : 2;
  if (F.isDeclaration() || F.arg_size() < NeedArgs)
    return false;
  for (unsigned I = 0; I < NeedArgs; ++I)
    if (!F.getArg(I)->getType()->isPointerTy())
      return false;
  if (K == Kind::HashNode) {
    // The container hint at entry (after the allocas, which must stay in
    // the entry block): `this` is the table's allocator base, an address
    // unique to the container, which is all a container hint needs.
    auto *Ptr = PointerType::getUnqual(F.getContext());
    emitGuardedCall(hintFunction(*F.getParent(), DEFERO_FN_HINT_CONTAINER, {Ptr}),
                    {F.getArg(0)}, &*F.getEntryBlock().getFirstNonPHIOrDbgOrAlloca());
    return true;
  }
  SmallVector<CallBase *, 2> Sites;
  for (BasicBlock &BB : F)
    for (Instruction &I : BB)
      if (auto *CB = dyn_cast<CallBase>(&I); CB && isNodeMaker(*CB))
        Sites.push_back(CB);
  bool Changed = false;
  Module &M = *F.getParent();
  for (CallBase *CB : Sites) {
    switch (K) {
    case Kind::List:
    case Kind::ForwardList:
      emitNeighbourHint(M, *CB, K);
      Changed = true;
      break;
    case Kind::ForwardListInit:
      emitForwardListInitHint(M, *CB);
      Changed = true;
      break;
    case Kind::TreeInsert:
      Changed |= emitTreeHint(M, *CB, N);
      break;
    case Kind::TreeEmplace:
      emitContainerHint(M, *CB);
      Changed = true;
      break;
    case Kind::HashNode: // handled above
    case Kind::None:
      break;
    }
  }
  return Changed;
}

} // namespace

/// Whether a function belongs to the standard library (its callers are
/// followed up to the program's own code when remarks name insert sites).
bool isStdFunction(const Function &F) {
  CxxName N;
  if (!demangle(F.getName(), N))
    return false;
  return StringRef(N.Context).starts_with("std::");
}

const char *hintName(Kind K) {
  switch (K) {
  case Kind::List:
  case Kind::ForwardList:
  case Kind::ForwardListInit:
    return "neighbor";
  case Kind::TreeInsert:
    return "tree";
  case Kind::TreeEmplace:
  case Kind::HashNode:
    return "container";
  case Kind::None:
    break;
  }
  return "none";
}

/// -Rpass=defero / -Rpass-missed=defero, at the program's own call sites:
/// the instrumented function is deep in libstdc++, so the remark goes to
/// every call, outside namespace std, that reaches it through std
/// functions (before inlining, the call graph still shows the way).
void remarkUserSites(Function &F, bool Hinted, const std::string &Container,
                     const char *Hint, const char *Why) {
  SmallVector<Function *, 8> Todo{&F};
  SmallPtrSet<Function *, 16> Seen{&F};
  while (!Todo.empty()) {
    Function *G = Todo.pop_back_val();
    for (User *U : G->users()) {
      auto *CB = dyn_cast<CallBase>(U);
      if (!CB || CB->getCalledFunction() != G)
        continue;
      Function *Caller = CB->getFunction();
      if (isStdFunction(*Caller)) {
        if (Seen.insert(Caller).second)
          Todo.push_back(Caller);
        continue;
      }
      OptimizationRemarkEmitter ORE(Caller);
      if (Hinted)
        ORE.emit([&] {
          return OptimizationRemark("defero", "ContainerHint", CB)
                 << Container << " insertion: " << Hint << " hint";
        });
      else
        ORE.emit([&] {
          return OptimizationRemarkMissed("defero", "NoContainerHint", CB)
                 << Container << " insertion not hinted: " << Why;
        });
    }
  }
}

/// The container's class name without its template arguments.
std::string containerName(const CxxName &N) {
  StringRef Ctx(N.Context);
  Ctx = Ctx.take_front(Ctx.find('<'));
  if (Ctx == "std::_Rb_tree")
    return "std::map/set";
  if (Ctx == "std::__detail::_Hashtable_alloc")
    return "std::unordered container";
  if (Ctx == "std::_Fwd_list_base")
    return "std::forward_list";
  if (Ctx == "std::__cxx11::list")
    return "std::list";
  return Ctx.str();
}

/// Node-making functions of containers with another allocator: named in
/// -Rpass-missed, never instrumented.
bool isCustomAllocatorContainer(const CxxName &N) {
  StringRef Ctx(N.Context);
  const bool Known = (Ctx.starts_with("std::__cxx11::list<") && N.Base == "_M_insert") ||
                     (Ctx.starts_with("std::_Fwd_list_base<") && N.Base == "_M_insert_after") ||
                     (Ctx.starts_with("std::_Rb_tree<") &&
                      (N.Base == "_M_insert_" || N.Base.rfind("_M_emplace", 0) == 0)) ||
                     (Ctx.starts_with("std::__detail::_Hashtable_alloc<") &&
                      N.Base == "_M_allocate_node");
  return Known && !lastTemplateArg(Ctx).starts_with("std::allocator<");
}

unsigned insertContainerHints(Module &M) {
  unsigned Changed = 0;
  struct Item {
    Function *F;
    Kind K;
    CxxName N;
  };
  SmallVector<Item, 16> Work;
  for (Function &F : M) {
    CxxName N;
    if (F.isDeclaration() || !demangle(F.getName(), N))
      continue;
    if (Kind K = containerOf(N); K != Kind::None)
      Work.push_back({&F, K, N});
    else if (isCustomAllocatorContainer(N))
      remarkUserSites(F, false, containerName(N), "",
                      "it has its own allocator (not std::allocator)");
  }
  for (Item &W : Work) {
    if (alreadyHinted(*W.F)) { // stl-patch's headers send the hint already
      const std::string Hint = std::string(hintName(W.K)) + " (from the patched headers)";
      remarkUserSites(*W.F, true, containerName(W.N), Hint.c_str(), "");
      continue;
    }
    const bool Done = instrument(*W.F, W.K, W.N);
    Changed += Done;
    remarkUserSites(*W.F, Done, containerName(W.N), hintName(W.K),
                    "the node-making code is not in the shape this pass knows");
  }
  return Changed;
}

// --- [[defero::policy]]: annotate("defero.policy", pred, k) -> a call ------

namespace {

/// The (predicate, K) of a "defero.policy" annotation: its annotation
/// string operand and its args operand ({ptr @pred, i32 k}).
bool policyOf(Value *AnnoStr, Value *AnnoArgs, StringRef &Pred, int &K) {
  auto *SG = dyn_cast<GlobalVariable>(AnnoStr->stripPointerCasts());
  auto *SD = SG && SG->hasInitializer()
                 ? dyn_cast<ConstantDataArray>(SG->getInitializer())
                 : nullptr;
  if (!SD || !SD->isCString() || SD->getAsCString() != "defero.policy")
    return false;
  auto *AG = dyn_cast<GlobalVariable>(AnnoArgs->stripPointerCasts());
  auto *AS = AG && AG->hasInitializer()
                 ? dyn_cast<ConstantStruct>(AG->getInitializer())
                 : nullptr;
  if (!AS || AS->getNumOperands() != 2)
    return false;
  auto *PG = dyn_cast<GlobalVariable>(AS->getOperand(0)->stripPointerCasts());
  auto *PD = PG && PG->hasInitializer()
                 ? dyn_cast<ConstantDataArray>(PG->getInitializer())
                 : nullptr;
  auto *KC = dyn_cast<ConstantInt>(AS->getOperand(1));
  if (!PD || !PD->isCString() || !KC)
    return false;
  Pred = PD->getAsCString();
  K = static_cast<int>(KC->getSExtValue());
  return true;
}

/// __defero_container_policy(Container, "pred", K) before IP, guarded.
void emitPolicyCall(Module &M, Value *Container, StringRef Pred, int K,
                    Instruction *IP) {
  LLVMContext &C = M.getContext();
  auto *Ptr = PointerType::getUnqual(C);
  FunctionCallee Fn = hintFunction(M, DEFERO_FN_CONTAINER_POLICY,
                                   {Ptr, Ptr, Type::getInt32Ty(C)});
  // The annotation's own strings live in "llvm.metadata", which is not
  // emitted: the name gets a string of its own.
  const std::string GlobalName = ("defero.policy." + Pred).str();
  Constant *Name = M.getNamedGlobal(GlobalName);
  if (!Name)
    Name = IRBuilder<>(IP).CreateGlobalString(Pred, GlobalName, 0, &M);
  emitGuardedCall(Fn, {Container, Name, ConstantInt::get(Type::getInt32Ty(C), K)},
                  IP);
}

/// Whether F is a constructor (C1/C2/...), not a destructor.
bool isConstructor(const Function *F) {
  if (!F || !F->getName().starts_with("_Z"))
    return false;
  const std::string Name = F->getName().str();
  ItaniumPartialDemangler D;
  if (D.partialDemangle(Name.c_str()) || !D.isCtorOrDtor())
    return false;
  size_t N = 0;
  char *Base = D.getFunctionBaseName(nullptr, &N);
  const bool Ctor = Base && Base[0] != '~';
  std::free(Base);
  return Ctor;
}

} // namespace

unsigned lowerPolicyAnnotations(Module &M) {
  unsigned Lowered = 0;
  // Locals: llvm.var.annotation(alloca, ...) comes right after the alloca,
  // before the container's constructor; the policy call goes after it.
  // Fields: llvm.ptr.annotation(field address) precedes every access; the
  // ones whose result is handed to a constructor are where the field is
  // made (member initialisers, copies, moves).
  for (Function &F : M) {
    const Intrinsic::ID ID = F.getIntrinsicID();
    if (ID != Intrinsic::var_annotation && ID != Intrinsic::ptr_annotation)
      continue;
    SmallVector<CallBase *, 8> Calls;
    for (User *U : F.users())
      if (auto *CB = dyn_cast<CallBase>(U); CB && CB->getCalledFunction() == &F)
        Calls.push_back(CB);
    for (CallBase *CB : Calls) {
      StringRef Pred;
      int K = 0;
      if (!policyOf(CB->getArgOperand(1), CB->getArgOperand(4), Pred, K))
        continue;
      if (ID == Intrinsic::ptr_annotation) {
        // The field is made by a constructor called on it, or by a call
        // that returns the container into it (sret: `= make()`, aggregate
        // initialisation).
        Instruction *Ctor = nullptr;
        for (User *U : CB->users())
          if (auto *Use = dyn_cast<CallBase>(U))
            for (unsigned A = 0; A < Use->arg_size() && !Ctor; ++A)
              if (Use->getArgOperand(A) == CB &&
                  ((A == 0 && isConstructor(Use->getCalledFunction())) ||
                   Use->paramHasAttr(A, Attribute::StructRet)))
                Ctor = Use;
        if (!Ctor)
          continue;
        emitPolicyCall(M, CB, Pred, K, Ctor);
      } else {
        emitPolicyCall(M, CB->getArgOperand(0), Pred, K, CB->getNextNode());
      }
      ++Lowered;
    }
  }
  // Globals (and static locals): llvm.global.annotations lists them; a
  // constructor that runs before the program's own (priority 101) sets
  // their policies.
  GlobalVariable *GA = M.getGlobalVariable("llvm.global.annotations");
  auto *Arr = GA && GA->hasInitializer()
                  ? dyn_cast<ConstantArray>(GA->getInitializer())
                  : nullptr;
  SmallVector<std::tuple<GlobalValue *, std::string, int>, 4> Globals;
  if (Arr)
    for (Value *Op : Arr->operands()) {
      auto *E = dyn_cast<ConstantStruct>(Op);
      StringRef Pred;
      int K = 0;
      if (!E || E->getNumOperands() < 5 ||
          !policyOf(E->getOperand(1), E->getOperand(4), Pred, K))
        continue;
      if (auto *GV = dyn_cast<GlobalVariable>(E->getOperand(0)->stripPointerCasts());
          GV && !GV->isThreadLocal())
        Globals.emplace_back(GV, Pred.str(), K);
    }
  if (!Globals.empty()) {
    LLVMContext &C = M.getContext();
    auto *Init = Function::Create(FunctionType::get(Type::getVoidTy(C), false),
                                  GlobalValue::InternalLinkage,
                                  "defero.policy.init", M);
    auto *BB = BasicBlock::Create(C, "entry", Init);
    Instruction *Ret = ReturnInst::Create(C, BB);
    for (auto &[GV, Pred, K] : Globals) {
      emitPolicyCall(M, GV, Pred, K, Ret);
      ++Lowered;
    }
    appendToGlobalCtors(M, Init, 101);
  }
  return Lowered;
}

PreservedAnalyses DeferoHintsPass::run(Module &M, ModuleAnalysisManager &) {
  // Once per module: opt runs it by name and again from the pipeline-start
  // callback when `default<O2>` is in the same pipeline.
  if (M.getNamedMetadata("defero.hints"))
    return PreservedAnalyses::all();
  M.getOrInsertNamedMetadata("defero.hints");
  lowerPolicyAnnotations(M);
  insertContainerHints(M);
  return PreservedAnalyses::none();
}

} // namespace defero
