//===- ClangPlugin.cpp - DeferoClangPlugin.so: the Clang plugin "defero" -===//
//
// DESCRIPTION
//   Loaded by DeferoPlugin.so when that library finds itself inside clang
//   (see PassPlugin.cpp). Registers the Clang plugin "defero", which adds
//   DeferoPlugin.so to the code generator's pass plugins, so
//   `-fplugin=DeferoPlugin.so` alone runs the defero-hints pass.
//   `-fplugin-arg-defero-disable` turns it off; any other argument is an
//   error with the accepted ones named.
//===----------------------------------------------------------------------===//
#include "clang/AST/ASTConsumer.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendPluginRegistry.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace {

std::string PassPluginPath; // set by defero_clang_plugin_init

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
    return std::make_unique<clang::ASTConsumer>();
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

} // namespace

extern "C" __attribute__((visibility("default"))) void
defero_clang_plugin_init(const char *PassPlugin) {
  PassPluginPath = PassPlugin ? PassPlugin : "";
}

static clang::FrontendPluginRegistry::Add<DeferoAction>
    X("defero", "container locality hints for the Defero allocator");
