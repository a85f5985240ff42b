//===- SegmentText.h - the lossless text form of a Segment ----------------===//
//
// What `TGC_DEBUG_DIR` dumps and `tgc-opt --import-segment` reads, so that
// import is tested with lit and a user's captured graph can be replayed
// through the pipeline without LibTorch. Plain C++, like Segment.h.
//
//   segment @cpu (%0: f32[4,8]{8,1}, %1: f32[8]{1}) {
//     %2: f32[4,8]{8,1} = aten::mul.Tensor(%0, %1)
//     %3: f32[4,8]{8,1} = aten::add.Tensor(%2, scalar(1: i64), 1)
//     %4: f32[4,8]{8,1}, none = aten::foo(%3) mutates
//     return %3, %4
//   }
//
// A value is `%id: dtype[sizes]{strides}` where it is defined (an input or a
// node's result; `none` is a result the op left undefined). Arguments:
// `%3` (tensor), `[%1, none]` (tensor list), `1` (int), `1.0`, `1e-05`,
// `inf`, `nan` (double: always with a `.`, an exponent or a name, exact),
// `true`, `false`, `"tanh"` (string), `none`, `[1, 2]` (int list),
// `[true, false]` (bool list), `[0.5, 2.0]` (double list),
// `device("cuda:0")`, `scalar(2.5: f64)` (a wrapped number: its dtype, and
// a float or integer literal as it holds one). An empty list is an int list
// unless written `tensors[]`, `bools[]` or `doubles[]`. A line `%id: type`
// alone declares a value that nothing defines. `//` starts a comment.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_COMPILER_CAPTURE_SEGMENTTEXT_H
#define TGC_COMPILER_CAPTURE_SEGMENTTEXT_H

#include "compiler/capture/Segment.h"

#include <string>
#include <string_view>

namespace tgc {

/// `segment` in its text form; parseSegment reads it back unchanged.
std::string printSegment(const Segment &segment);

/// Reads the text form into `segment`. On malformed input returns false
/// with `error` as `line:column: what was expected`; every id, size and
/// number is checked, and values must be defined before they are used.
bool parseSegment(std::string_view text, Segment &segment, std::string &error);

} // namespace tgc

#endif // TGC_COMPILER_CAPTURE_SEGMENTTEXT_H
