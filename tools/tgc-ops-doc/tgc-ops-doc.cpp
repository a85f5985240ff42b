//===- tgc-ops-doc.cpp - writes or checks docs/ops.md from the op registry ===//
//
//   tgc-ops-doc                 print the document
//   tgc-ops-doc -o FILE         write it to FILE
//   tgc-ops-doc --check FILE    exit 1 when FILE differs from it (stale)
//
//===----------------------------------------------------------------------===//
#include "compiler/ops/OpRegistry.h"

#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

int main(int argc, char **argv) {
  std::string doc = tgc::ops::opsMarkdown();
  if (argc == 1) {
    std::cout << doc;
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "-o") == 0) {
    std::ofstream out(argv[2], std::ios::binary);
    out << doc;
    if (!out) {
      std::cerr << "tgc-ops-doc: cannot write " << argv[2] << "\n";
      return 1;
    }
    return 0;
  }
  if (argc == 3 && std::strcmp(argv[1], "--check") == 0) {
    std::ifstream in(argv[2], std::ios::binary);
    std::stringstream have;
    have << in.rdbuf();
    if (!in || have.str() != doc) {
      std::cerr << "tgc-ops-doc: " << argv[2] << " is stale: it does not match the op registry "
                << "(compiler/ops/OpRegistry.cpp). Regenerate it with "
                << "`cmake --build build --target update-ops-doc` and commit it.\n";
      return 1;
    }
    return 0;
  }
  std::cerr << "usage: tgc-ops-doc [-o FILE | --check FILE]\n";
  return 2;
}
