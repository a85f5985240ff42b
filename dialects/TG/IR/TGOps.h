//===- TGOps.h - ops, attributes and interfaces of `tg` -------------------===//
#ifndef TGC_DIALECTS_TG_IR_TGOPS_H
#define TGC_DIALECTS_TG_IR_TGOPS_H

#include "dialects/TG/IR/TGDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/TG/IR/TGInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/TG/IR/TGAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/TG/IR/TGOps.h.inc"

#endif // TGC_DIALECTS_TG_IR_TGOPS_H
