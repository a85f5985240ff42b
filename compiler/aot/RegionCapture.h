//===- RegionCapture.h - capturing regions while sample inputs run --------===//
//
// At compile time the rewritten program runs on sample inputs with a
// CaptureTable current: the first time a region is reached its nodes run
// under the tracer (giving its Segment and the layouts it guards on), and
// every time they run eagerly to give the program real values. A node the
// tracer breaks at is reported, so the compiler cuts the graph again with
// that node left to TorchScript.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_COMPILER_AOT_REGIONCAPTURE_H
#define TGC_COMPILER_AOT_REGIONCAPTURE_H

#include "compiler/aot/Regions.h"
#include "compiler/capture/Segment.h"
#include "runtime/SegmentOps.h"

#include <map>
#include <string>
#include <vector>

namespace tgc {

struct CapturedRegion {
  enum State { NotReached, Captured, Failed } state = NotReached;
  Segment segment;
  std::string reason; ///< why it failed
};

class CaptureTable final : public SegmentTable {
public:
  explicit CaptureTable(const std::vector<Region> &regions) : regions_(regions) {}
  bool guard(int64_t id, const std::vector<at::Tensor> &inputs) override;
  std::vector<at::Tensor> run(int64_t id, const std::vector<at::Tensor> &inputs) override;

  const std::map<int64_t, CapturedRegion> &captured() const { return captured_; }
  /// Node numbers the tracer broke at, with the reason.
  const std::map<int64_t, std::string> &breaks() const { return breaks_; }

private:
  void capture(const Region &region, const std::vector<at::Tensor> &inputs,
               CapturedRegion &out);

  const std::vector<Region> &regions_;
  std::map<int64_t, CapturedRegion> captured_;
  std::map<int64_t, std::string> breaks_;
};

} // namespace tgc

#endif // TGC_COMPILER_AOT_REGIONCAPTURE_H
