//===- Commands.h - the subcommands of tgc-aot ----------------------------===//
#ifndef TGC_TOOLS_TGC_AOT_COMMANDS_H
#define TGC_TOOLS_TGC_AOT_COMMANDS_H

#include "compiler/aot/AotCompiler.h"

#include <string>
#include <vector>

namespace tgc {

/// Documented exit codes (tgc-aot --help, docs/aot.md).
enum Exit {
  kExitOk = 0,
  kExitFailure = 1,
  kExitUsage = 2,
  kExitBadModel = 3,
  kExitBadPackage = 4,
  kExitNoDevice = 5,
  kExitUntrusted = 6
};

struct RunOptions {
  std::string package;
  std::vector<std::string> inputs; ///< NAME=FILE
  std::string model;               ///< --check-against
  uint64_t seed = 0;
  double atol = -1, rtol = -1; ///< negative: by dtype
  std::vector<std::string> verifyKeys; ///< public key files: require a signature by one
};

int compileCommand(AotOptions options, const std::vector<std::string> &inputs, bool quiet);
int runCommand(const RunOptions &options, bool quiet);
int inspectCommand(const std::string &package, bool asJson);
/// Writes a new Ed25519 key pair: NAME.key (secret, mode 0600) and NAME.pub.
int keygenCommand(const std::string &name, bool quiet);
/// Reads a key file into `text`; false with a message on stderr.
bool readKeyFile(const std::string &path, std::string &text);

} // namespace tgc

#endif // TGC_TOOLS_TGC_AOT_COMMANDS_H
