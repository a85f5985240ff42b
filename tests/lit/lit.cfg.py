# lit configuration for tgc-opt tests: each .mlir file (MLIR) and each .seg
# file (a captured segment in its text form, read by `tgc-opt
# --import-segment`) is a test; RUN lines call tgc-opt, FileCheck and
# split-file from the build tree and LLVM 19.
import os
import lit.formats

config.name = "tgc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".seg"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.tgc_obj_root
config.environment["PATH"] = os.pathsep.join(
    [config.tgc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
