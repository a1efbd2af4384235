//===- PassPlugin.cpp - DeferoPlugin.so: the pass plugin, and the door to
//                      the Clang plugin ---------------------------------===//
//
// DESCRIPTION
//   DeferoPlugin.so is what users name, three ways:
//   1. `opt -load-pass-plugin=DeferoPlugin.so -passes=defero-hints`
//      (llvmGetPassPluginInfo registers the passes by name: defero-hints,
//      and the late defero-fuse);
//   2. `clang -fpass-plugin=DeferoPlugin.so`: defero-hints runs at the
//      start of every pipeline (before inlining, at -O0 too), defero-fuse
//      at its end (-O1 and up);
//   3. `clang -fplugin=DeferoPlugin.so`: loaded into clang, this library
//      loads its companion DeferoClangPlugin.so (beside it), the Clang
//      plugin "defero", which adds DeferoPlugin.so to the code generator's
//      pass plugins - so the one flag also runs the pass.
//   Why a companion: the Clang plugin's code needs Clang's symbols, which
//   opt does not have, and Debian's libclang-cpp cannot be linked in (it
//   registers some LLVM options a second time when opt loads it). This
//   library therefore uses LLVM only, and loads the Clang part only when it
//   finds itself inside clang.
//
// USAGE
//   clang++ -fplugin=build/lib/DeferoPlugin.so prog.cpp
//===----------------------------------------------------------------------===//
#include "DeferoFuse.h"
#include "DeferoHints.h"

#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"

#include "llvm/Support/raw_ostream.h"

#include <dlfcn.h>
#include <string>

using namespace llvm;

// --- the LLVM pass plugin ---------------------------------------------------

static void registerPasses(PassBuilder &PB) {
  PB.registerPipelineParsingCallback(
      [](StringRef Name, ModulePassManager &MPM,
         ArrayRef<PassBuilder::PipelineElement>) {
        if (Name == "defero-hints") {
          MPM.addPass(defero::DeferoHintsPass());
          return true;
        }
        if (Name == "defero-fuse") {
          MPM.addPass(defero::DeferoFusePass());
          return true;
        }
        return false;
      });
  PB.registerPipelineStartEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel) {
        MPM.addPass(defero::DeferoHintsPass());
      });
  // The late part: after inlining has put hints next to operator new.
  PB.registerOptimizerLastEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel Level) {
        if (Level != OptimizationLevel::O0)
          MPM.addPass(defero::DeferoFusePass());
      });
}

extern "C" LLVM_ATTRIBUTE_WEAK ::llvm::PassPluginLibraryInfo
llvmGetPassPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "DeferoPlugin", "0.1", registerPasses};
}

// --- the door to the Clang plugin --------------------------------------

namespace {

/// The path of the shared object this code was loaded from.
std::string thisLibrary() {
  Dl_info Info;
  if (dladdr(reinterpret_cast<void *>(&llvmGetPassPluginInfo), &Info) &&
      Info.dli_fname)
    return Info.dli_fname;
  return {};
}

/// Runs when the library is loaded. Inside clang (its frontend symbols are
/// in the process), loads DeferoClangPlugin.so from this library's folder
/// and tells it where this library is. Elsewhere (opt) does nothing.
struct LoadClangPlugin {
  LoadClangPlugin() {
    if (!dlsym(RTLD_DEFAULT, "_ZN5clang17ASTFrontendAction13ExecuteActionEv"))
      return;
    const std::string Self = thisLibrary();
    const std::string::size_type Slash = Self.rfind('/');
    const std::string Dir =
        Slash == std::string::npos ? "." : Self.substr(0, Slash);
    const std::string Companion = Dir + "/DeferoClangPlugin.so";
    void *H = dlopen(Companion.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!H) {
      errs() << "defero: cannot load " << Companion << ": " << dlerror()
             << "\n";
      return;
    }
    using Init = void (*)(const char *);
    if (auto Fn = reinterpret_cast<Init>(dlsym(H, "defero_clang_plugin_init")))
      Fn(Self.c_str());
  }
} TheLoader;

} // namespace
