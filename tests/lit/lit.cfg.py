# lit configuration for tgc-opt tests: each .mlir file is a test, its RUN
# lines call tgc-opt and FileCheck from the build tree and LLVM 19.
import os
import lit.formats

config.name = "tgc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.tgc_obj_root
config.environment["PATH"] = os.pathsep.join(
    [config.tgc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
