//===- TGKDialect.h - the `tgk` kernel dialect ----------------------------===//
#ifndef TGC_DIALECTS_TGK_IR_TGKDIALECT_H
#define TGC_DIALECTS_TGK_IR_TGKDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/TGK/IR/TGKDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/TGK/IR/TGKAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/TGK/IR/TGKOps.h.inc"

#endif // TGC_DIALECTS_TGK_IR_TGKDIALECT_H
