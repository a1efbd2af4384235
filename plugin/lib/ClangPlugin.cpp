//===- ClangPlugin.cpp - DeferoClangPlugin.so: the Clang plugin "defero" -===//
//
// DESCRIPTION
//   Loaded by DeferoPlugin.so when that library finds itself inside clang
//   (see PassPlugin.cpp). Registers the Clang plugin "defero", which adds
//   DeferoPlugin.so to the code generator's pass plugins, so
//   `-fplugin=DeferoPlugin.so` alone runs the defero-hints pass.
//   `-fplugin-arg-defero-disable` turns it off; any other argument is an
//   error with the accepted ones named.
//
//   It also gives the attribute that chooses a container's policy:
//
//     [[defero::policy("best")]] std::map<int, int> m;
//     [[defero::policy("path", 16)]] std::set<long> s;     // predicate, K
//     std::list<int> l __attribute__((defero_policy("first")));
//
//   on a variable or field of a node-based container type with
//   std::allocator. It is checked here (with a diagnostic at the attribute
//   for a wrong predicate, a K out of range, or the wrong kind of
//   declaration) and becomes clang's `annotate("defero.policy", pred, k)`,
//   which the defero-hints pass lowers to __defero_container_policy.
//===----------------------------------------------------------------------===//
#include "clang/AST/ASTConsumer.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/Expr.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/ParsedAttrInfo.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendPluginRegistry.h"
#include "clang/Sema/ParsedAttr.h"
#include "clang/Sema/Sema.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "defero/abi.h"

namespace {

// The predicates the attribute accepts, as its errors list them.
#define DEFERO_PREDICATE_LIST                                                                  \
  DEFERO_PREDICATE_FIRST ", " DEFERO_PREDICATE_BEST ", " DEFERO_PREDICATE_MATCH ", "    \
  DEFERO_PREDICATE_PATH ", " DEFERO_PREDICATE_AUTO

std::string PassPluginPath; // set by defero_clang_plugin_init

std::unique_ptr<clang::ASTConsumer> makePolicyTypeCheck();

class DeferoAction : public clang::PluginASTAction {
  bool Disabled = false;

protected:
  std::unique_ptr<clang::ASTConsumer>
  CreateASTConsumer(clang::CompilerInstance &CI, llvm::StringRef) override {
    if (!Disabled) {
      auto &Plugins = CI.getCodeGenOpts().PassPlugins;
      if (PassPluginPath.empty()) {
        clang::DiagnosticsEngine &D = CI.getDiagnostics();
        D.Report(D.getCustomDiagID(
            clang::DiagnosticsEngine::Error,
            "defero: DeferoClangPlugin.so was loaded without DeferoPlugin.so; "
            "pass -fplugin=DeferoPlugin.so"));
      } else if (std::find(Plugins.begin(), Plugins.end(), PassPluginPath) ==
                 Plugins.end()) {
        Plugins.push_back(PassPluginPath); // not twice with -fpass-plugin
      }
    }
    return makePolicyTypeCheck();
  }

  bool ParseArgs(const clang::CompilerInstance &CI,
                 const std::vector<std::string> &Args) override {
    for (const std::string &A : Args) {
      if (A == "disable") {
        Disabled = true;
        continue;
      }
      clang::DiagnosticsEngine &D = CI.getDiagnostics();
      D.Report(D.getCustomDiagID(
          clang::DiagnosticsEngine::Error,
          "defero: unknown plugin argument '%0' (accepted: disable)"))
          << A;
      return false;
    }
    return true;
  }

  ActionType getActionType() override { return AddBeforeMainAction; }
};

// --- [[defero::policy(predicate[, K])]] ---------------------------------------

/// The libstdc++ class templates whose nodes the plugin hints.
bool isNodeContainerName(llvm::StringRef Name) {
  return llvm::StringSwitch<bool>(Name)
      .Cases("list", "forward_list", "map", "multimap", "set", "multiset", true)
      .Cases("unordered_map", "unordered_multimap", "unordered_set",
             "unordered_multiset", true)
      .Default(false);
}

/// Whether T is a node-based standard container. Sets Allocator to its
/// allocator type when T is a concrete specialisation (not in a template).
bool isNodeContainer(clang::QualType T, clang::QualType &Allocator) {
  T = T.getCanonicalType();
  if (const auto *RT = T->getAs<clang::RecordType>()) {
    const auto *Spec =
        llvm::dyn_cast<clang::ClassTemplateSpecializationDecl>(RT->getDecl());
    if (!Spec || !Spec->isInStdNamespace() ||
        !isNodeContainerName(Spec->getName()))
      return false;
    const clang::TemplateArgumentList &Args = Spec->getTemplateArgs();
    if (Args.size() == 0 || Args[Args.size() - 1].getKind() != clang::TemplateArgument::Type)
      return false;
    Allocator = Args[Args.size() - 1].getAsType();
    return true;
  }
  // Inside a template: std::list<T> is a dependent specialisation.
  if (const auto *TST = T->getAs<clang::TemplateSpecializationType>()) {
    const clang::TemplateDecl *TD = TST->getTemplateName().getAsTemplateDecl();
    return TD && TD->isInStdNamespace() && isNodeContainerName(TD->getName());
  }
  return false;
}

bool isStdAllocator(clang::QualType A) {
  const auto *RD = A.getCanonicalType()->getAsCXXRecordDecl();
  return RD && RD->isInStdNamespace() && RD->getName() == "allocator";
}

/// Why T is not a type [[defero::policy]] applies to; empty if it is.
std::string containerProblem(const clang::DeclaratorDecl *VD, clang::QualType T,
                             const clang::PrintingPolicy &Print) {
  clang::QualType Allocator;
  if (!isNodeContainer(T, Allocator))
    return "defero::policy applies to node-based containers (std::list, "
           "forward_list, map, set, multimap, multiset, unordered_*); '" +
           VD->getNameAsString() + "' has type '" + T.getAsString(Print) + "'";
  if (!Allocator.isNull() && !isStdAllocator(Allocator))
    return "defero::policy needs a container with std::allocator (its nodes "
           "carry the hints); '" + VD->getNameAsString() + "' uses '" +
           Allocator.getAsString(Print) + "'";
  return {};
}

struct PolicyAttrInfo : public clang::ParsedAttrInfo {
  PolicyAttrInfo() {
    // The predicate and an optional K; counted in handleDeclAttribute, so
    // that an unrelated [[policy]] (see Spellings) is never an error.
    NumArgs = 0;
    OptArgs = 15;
    // Clang 19 asks plugins whether they know a C++11 attribute by its
    // name without the scope before it parses the arguments, so the
    // unscoped name is listed too; diagAppertainsToDecl refuses it with a warning.
    static constexpr Spelling S[] = {
        {clang::ParsedAttr::AS_CXX11, "defero::policy"},
        {clang::ParsedAttr::AS_CXX11, "policy"},
        {clang::ParsedAttr::AS_GNU, "defero_policy"}};
    Spellings = S;
  }

  static void error(clang::Sema &S, clang::SourceLocation Loc,
                    const llvm::Twine &Text) {
    clang::DiagnosticsEngine &D = S.getDiagnostics();
    S.Diag(Loc, D.getCustomDiagID(clang::DiagnosticsEngine::Error, "%0"))
        << Text.str();
  }

  /// [[policy]] without the defero:: scope is not ours (see Spellings).
  static bool unscoped(clang::Sema &S, const clang::ParsedAttr &Attr) {
    if (Attr.getSyntax() != clang::ParsedAttr::AS_CXX11 || Attr.hasScope())
      return false;
    clang::DiagnosticsEngine &D = S.getDiagnostics();
    S.Diag(Attr.getLoc(),
           D.getCustomDiagID(clang::DiagnosticsEngine::Warning,
                             "unknown attribute 'policy' ignored; Defero's is "
                             "spelled [[defero::policy(...)]]"));
    return true;
  }

  bool diagAppertainsToStmt(clang::Sema &S, const clang::ParsedAttr &Attr,
                            const clang::Stmt *) const override {
    if (!unscoped(S, Attr))
      error(S, Attr.getLoc(),
            "defero::policy applies to a variable or a field of a node-based "
            "container type, not to a statement");
    return false;
  }

  bool diagAppertainsToDecl(clang::Sema &S, const clang::ParsedAttr &Attr,
                            const clang::Decl *D) const override {
    if (unscoped(S, Attr))
      return false;
    const bool VarOrField =
        (llvm::isa<clang::VarDecl>(D) && !llvm::isa<clang::ParmVarDecl>(D)) ||
        llvm::isa<clang::FieldDecl>(D);
    if (!VarOrField)
      error(S, Attr.getLoc(),
            "defero::policy applies to a variable or a field of a node-based "
            "container type (std::list, forward_list, map, set, multimap, "
            "multiset, unordered_*)");
    return VarOrField;
  }

  AttrHandling handleDeclAttribute(clang::Sema &S, clang::Decl *D,
                                   const clang::ParsedAttr &Attr) const override {
    clang::ASTContext &Ctx = S.getASTContext();
    const auto *VD = llvm::cast<clang::DeclaratorDecl>(D);
    clang::PrintingPolicy Print(Ctx.getLangOpts());
    Print.SuppressTagKeyword = true;
    if (Attr.getNumArgs() == 0 || Attr.getNumArgs() > 2) {
      error(S, Attr.getLoc(),
            "defero::policy takes a predicate and an optional K, e.g. "
            "[[defero::policy(\"best\")]] or [[defero::policy(\"path\", 16)]]");
      return AttributeNotApplied;
    }
    if (const auto *Var = llvm::dyn_cast<clang::VarDecl>(VD);
        Var && Var->getTLSKind() != clang::VarDecl::TLS_None) {
      error(S, Attr.getLoc(),
            "defero::policy does not apply to a thread_local variable ('" +
                VD->getNameAsString() + "': one container per thread)");
      return AttributeNotApplied;
    }
    clang::QualType Allocator;
    // `auto x = ...`, `std::list x{...}`: the type is known only once the
    // initialiser is seen; PolicyTypeCheck checks it at the end.
    const bool Deduced = VD->getType()->getContainedDeducedType() != nullptr;
    if (!Deduced) {
      if (std::string Problem = containerProblem(VD, VD->getType(), Print);
          !Problem.empty()) {
        error(S, Attr.getLoc(), Problem);
        return AttributeNotApplied;
      }
    }
    // The predicate: a string literal naming one.
    clang::Expr *PredE = Attr.getArgAsExpr(0);
    const auto *Lit = PredE ? llvm::dyn_cast<clang::StringLiteral>(
                                  PredE->IgnoreParenCasts())
                            : nullptr;
    if (!Lit || !Lit->isOrdinary()) {
      error(S, PredE ? PredE->getExprLoc() : Attr.getLoc(),
            "defero::policy: the first argument must be a string literal "
            "naming the predicate (" DEFERO_PREDICATE_LIST ")");
      return AttributeNotApplied;
    }
    const llvm::StringRef Pred = Lit->getString();
    if (!llvm::is_contained({DEFERO_PREDICATE_FIRST, DEFERO_PREDICATE_BEST, DEFERO_PREDICATE_MATCH,
                             DEFERO_PREDICATE_PATH, DEFERO_PREDICATE_AUTO},
                            Pred)) {
      error(S, Lit->getBeginLoc(),
            "defero::policy: unknown predicate '" + Pred + "' (accepted: " DEFERO_PREDICATE_LIST ")");
      return AttributeNotApplied;
    }
    // K: an integer constant in 1..DEFERO_K_MAX; absent means the process
    // default.
    llvm::SmallVector<clang::Expr *, 2> Args{PredE};
    if (Attr.getNumArgs() > 1) {
      clang::Expr *KE = Attr.getArgAsExpr(1);
      std::optional<llvm::APSInt> K =
          KE && !KE->isValueDependent() ? KE->getIntegerConstantExpr(Ctx)
                                        : std::nullopt;
      if (!K) {
        error(S, KE ? KE->getExprLoc() : Attr.getLoc(),
              "defero::policy: the second argument (K) must be an integer "
              "constant");
        return AttributeNotApplied;
      }
      if (*K < 1 || *K > DEFERO_K_MAX) {
        error(S, KE->getExprLoc(),
              "defero::policy: K=" + llvm::toString(*K, 10) +
                  " is out of range (accepted: 1.." DEFERO_STR(DEFERO_K_MAX)
                  "; leave it out for the default)");
        return AttributeNotApplied;
      }
      Args.push_back(clang::IntegerLiteral::Create(
          Ctx, llvm::APInt(32, K->getZExtValue()), Ctx.IntTy, KE->getExprLoc()));
    } else {
      Args.push_back(clang::IntegerLiteral::Create(Ctx, llvm::APInt(32, 0),
                                                   Ctx.IntTy, Attr.getLoc()));
    }
    if (!S.ConstantFoldAttrArgs(Attr, Args))
      return AttributeNotApplied;
    D->addAttr(clang::AnnotateAttr::CreateImplicit(
        Ctx, "defero.policy", Args.data(), Args.size(), Attr.getRange()));
    return AttributeApplied;
  }
};

/// Variables declared with `auto` or class template argument deduction get
/// their type from the initialiser, after the attribute was read: their
/// type is checked here, at the end of the translation unit.
class PolicyTypeCheck : public clang::ASTConsumer,
                        public clang::RecursiveASTVisitor<PolicyTypeCheck> {
  clang::DiagnosticsEngine *Diags = nullptr;
  const clang::PrintingPolicy *Print = nullptr;

public:
  void HandleTranslationUnit(clang::ASTContext &Ctx) override {
    clang::PrintingPolicy P(Ctx.getLangOpts());
    P.SuppressTagKeyword = true;
    Diags = &Ctx.getDiagnostics();
    Print = &P;
    TraverseDecl(Ctx.getTranslationUnitDecl());
  }

  bool VisitVarDecl(clang::VarDecl *VD) {
    const clang::TypeSourceInfo *Written = VD->getTypeSourceInfo();
    if (!Written || !Written->getType()->getContainedDeducedType() ||
        VD->getType()->isUndeducedType() || VD->getType()->isDependentType())
      return true;
    for (const auto *A : VD->specific_attrs<clang::AnnotateAttr>()) {
      if (A->getAnnotation() != "defero.policy")
        continue;
      if (std::string Problem = containerProblem(VD, VD->getType(), *Print);
          !Problem.empty())
        Diags->Report(A->getLocation(),
                      Diags->getCustomDiagID(clang::DiagnosticsEngine::Error, "%0"))
            << Problem;
    }
    return true;
  }
};

std::unique_ptr<clang::ASTConsumer> makePolicyTypeCheck() {
  return std::make_unique<PolicyTypeCheck>();
}

} // namespace

static clang::ParsedAttrInfoRegistry::Add<PolicyAttrInfo>
    Policy("defero-policy", "[[defero::policy(predicate, K)]] on a container");

extern "C" __attribute__((visibility("default"))) void
defero_clang_plugin_init(const char *PassPlugin) {
  PassPluginPath = PassPlugin ? PassPlugin : "";
}

static clang::FrontendPluginRegistry::Add<DeferoAction>
    X("defero", "container locality hints for the Defero allocator");
