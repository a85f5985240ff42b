//===- Attention.h - decomposed attention as one SDPA call ----------------===//
//
// Traced models often spell attention out (torchvision's Swin, Hugging Face
// models in "eager" attention, hand-written blocks): matmul(q, k^T), a scale,
// masks added, softmax over the last dim, matmul with v. Captured below
// autograd, each matmul is expand + a copying reshape + bmm + a reshape
// back. fuseAttention (issue 17 point 5) finds that pattern in an inference
// segment and makes it one ATen SDPA call: on the CPU
// aten::_scaled_dot_product_flash_attention_for_cpu (blocked over keys,
// online softmax; faster than bmm + softmax + bmm on every zoo shape, see
// bench/Attention.cpp), elsewhere the composite scaled_dot_product_attention.
//
// What it matches, from the first bmm on:
//  - q and v reached from the bmms' operands through reshapes (view,
//    _unsafe_view, reshape, _reshape_alias, contiguous clones, expands to
//    the same shape), k through such reshapes and a transpose of its last
//    two dims; q, k and v 3-d or 4-d with equal leading dims, unit stride in
//    the last dim; on the CPU v's head size that of q and k (the flash
//    kernel's requirement);
//  - between the first bmm and the softmax: reshapes, multiplications and
//    divisions by numbers (the SDPA scale), additions of tensors (masks,
//    relative position biases), each value read once;
//  - softmax over the last dim, then reshapes into the second bmm.
// One mask added to the 4-d (3-d) scores after the scaling is passed as
// SDPA's attn_mask as it is (broadcast); otherwise (several masks, masks
// added through other views, as Swin's shifted windows do) the same chain is
// kept but fed zeros instead of q k^T, and what it computes is the mask.
// SDPA's result has q's layout; when that is not the contiguous one the
// second bmm returned (heads split from a projection by a transpose), it
// is copied to it (a copy that tgc's kernels reading it absorb).
//
// Plain C++ (no LibTorch, no MLIR), like Segment.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_COMPILER_CAPTURE_ATTENTION_H
#define TGC_COMPILER_CAPTURE_ATTENTION_H

#include "compiler/capture/Segment.h"

namespace tgc {

/// Rewrites the decomposed attentions of inference segment `seg` in place;
/// returns how many became one SDPA call. The segment must not be a
/// training graph (SDPA's backward is not what the bmms' would be).
int fuseAttention(Segment &seg);

} // namespace tgc

#endif // TGC_COMPILER_CAPTURE_ATTENTION_H
