# lit configuration for Defero's compiler-side tests (llvm-tutor's layout):
# .ll files run the defero-hints pass under opt, .cpp files go through
# clang with the plugin. Paths come from lit.site.cfg.py (configured by
# CMake).
import os

import lit.formats

config.name = "Defero"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".ll", ".cpp", ".c"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.defero_obj_root, "test", "plugin")

# FileCheck, not, opt from LLVM 19 come first on PATH.
config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])

config.substitutions.append(("%shlibdir", config.defero_lib_dir))
config.substitutions.append(("%shlibext", ".so"))
config.substitutions.append(("%libdefero", config.libdefero))
config.substitutions.append(("%stlpatch", os.path.join(config.defero_obj_root, "stl-patch", "include")))
config.substitutions.append(("%opt", os.path.join(config.llvm_tools_dir, "opt")))
config.substitutions.append(("%clangxx", config.clangxx))
config.substitutions.append(("%defero_cxx", os.path.join(config.defero_bin_dir, "defero-c++")))
config.substitutions.append(("%defero_cc", os.path.join(config.defero_bin_dir, "defero-cc")))
