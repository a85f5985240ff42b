//===- tgc-aot.cpp - compile TorchScript into packages, run and inspect them ===//
#include "compiler/aot/AotCompiler.h"
#include "tools/tgc-aot/Commands.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

using namespace tgc;

namespace {

const char *kFooter = R"(Examples:
  tgc-aot compile resnet18.pt --input x:f32[1,3,224,224] -o resnet18.tgcpkg
  tgc-aot compile gpt2.pt --input ids:i64[2,32]@0:50257 --mode max-autotune -o gpt2.tgcpkg
  tgc-aot compile mlp.pt --input x:f32[8,64] --backend cuda --arch sm_80 --arch sm_90 -o mlp.tgcpkg
  tgc-aot run resnet18.tgcpkg --check-against resnet18.pt
  tgc-aot run resnet18.tgcpkg --input x=image.pt
  tgc-aot inspect resnet18.tgcpkg
  tgc-aot keygen release            (writes release.key and release.pub)
  tgc-aot compile resnet18.pt --input x:f32[1,3,224,224] --sign release.key -o r18.tgcpkg
  tgc-aot run r18.tgcpkg --verify-key release.pub

Trust: loading or running a package runs its native code (its kernels are a
shared object), like loading a shared library. Run only packages you would
run as programs, or sign them (--sign) and require the signature where they
are loaded (--verify-key, or Package::load(path, {.trusted_keys = ...})):
an unsigned, foreign-signed or modified package is then refused before any
of it is loaded. inspect loads the package too.

Input specs: NAME:DTYPE[D0,D1,...] with DTYPE one of f16 bf16 f32 f64 i8 i16 i32
i64 u8 bool; integer inputs take an optional @LOW:HIGH range for random values in [LOW, HIGH).

Exit codes:
  0  success
  1  failure: outputs do not match eager (--check-against), a kernel does not
     compile, a file cannot be written
  2  usage: bad arguments, malformed --input spec, inputs that miss the guards
  3  bad model: missing, not TorchScript, fails on its inputs, or a --fullgraph
     graph break (the message names the op)
  4  bad package: missing, not a package, corrupt or truncated (checksum),
     or written by another tgc, package format or LibTorch version
  5  missing device: the package targets a device this machine cannot run
  6  untrusted package: --verify-key given and the package is unsigned, signed
     by another key, or modified since it was signed
See docs/aot.md.)";

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"tgc-aot: compile TorchScript modules ahead of time into packages that "
               "tgc_runtime loads and runs (tgc::Package)"};
  app.footer(kFooter);
  app.require_subcommand(1);
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet, "print nothing but errors and requested results");

  AotOptions compile;
  std::vector<std::string> compileInputs;
  CLI::App *c = app.add_subcommand("compile", "compile MODEL.pt into a package");
  c->add_option("model", compile.model, "TorchScript module (torch.jit.save)")->required();
  c->add_option("--input", compileInputs, "input spec NAME:DTYPE[SHAPE], one per forward argument")
      ->required();
  c->add_option("-o,--output", compile.output, "package to write (.tgcpkg)")->required();
  c->add_option("--backend", compile.backend, "cpu or cuda")->capture_default_str();
  c->add_option("--arch", compile.archs, "CUDA arch to build a cubin for (sm_80, sm_90); repeatable");
  c->add_option("--mode", compile.mode, "default or max-autotune")->capture_default_str();
  c->add_flag("--fullgraph", compile.fullgraph,
              "fail instead of leaving any op to TorchScript (graph breaks are errors)");
  c->add_flag("--compress", compile.compress, "zstd-compress weights, plans and kernels");
  c->add_option("--samples", compile.samples,
                "sample runs on random inputs (randn, rand, -rand, ...) that reach branches")
      ->capture_default_str();
  c->add_option("--sign", compile.signingKey,
                "sign the package with this secret key (tgc-aot keygen NAME writes NAME.key)");
  c->add_option("--cache-dir", compile.cacheDir,
                "the artifact cache to build through (default: the JIT's, TGC_CACHE_DIR or "
                "~/.cache/tgc): kernels the JIT or an earlier compile built are reused");

  RunOptions run;
  CLI::App *r = app.add_subcommand("run", "run a package on random or given inputs");
  r->add_option("package", run.package, "package (.tgcpkg)")->required();
  r->add_option("--input", run.inputs, "NAME=FILE: a torch.save'd tensor for input NAME");
  r->add_option("--check-against", run.model, "TorchScript model to compare with (eager)");
  r->add_option("--seed", run.seed, "seed of the random inputs")->capture_default_str();
  r->add_option("--atol", run.atol, "absolute tolerance (default: by dtype)");
  r->add_option("--rtol", run.rtol, "relative tolerance (default: by dtype)");
  r->add_option("--verify-key", run.verifyKeys,
                "public key file (NAME.pub): refuse the package unless it is signed by this "
                "key (repeatable: any of them)");

  std::string keyName;
  CLI::App *k = app.add_subcommand("keygen", "write a new Ed25519 signing key pair");
  k->add_option("name", keyName, "writes NAME.key (secret, mode 0600) and NAME.pub")->required();

  std::string inspected;
  bool asJson = false;
  CLI::App *i = app.add_subcommand("inspect", "list a package's kernels, sizes, inputs, metadata");
  i->add_option("package", inspected, "package (.tgcpkg)")->required();
  i->add_flag("--json", asJson, "print meta.json as stored");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (c->parsed())
    return compileCommand(compile, compileInputs, quiet);
  if (r->parsed())
    return runCommand(run, quiet);
  if (k->parsed())
    return keygenCommand(keyName, quiet);
  return inspectCommand(inspected, asJson);
}
