//===- TGDialect.cpp - registration of the `tg` dialect -------------------===//
#include "dialects/TG/IR/TGDialect.h"
#include "dialects/TG/IR/TGOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace tgc::tg;

#include "dialects/TG/IR/TGDialect.cpp.inc"
#include "dialects/TG/IR/TGInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/TG/IR/TGAttrs.cpp.inc"

void TGDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/TG/IR/TGOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/TG/IR/TGAttrs.cpp.inc"
      >();
}
