//===- TGDialect.h - the `tg` tensor graph dialect ------------------------===//
#ifndef TGC_DIALECTS_TG_IR_TGDIALECT_H
#define TGC_DIALECTS_TG_IR_TGDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Dialect.h"

#include "dialects/TG/IR/TGDialect.h.inc"

#endif // TGC_DIALECTS_TG_IR_TGDIALECT_H
