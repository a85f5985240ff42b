//===- ScatterEmitter.cpp - tgk.scatter_add_kernel to C++ and CUDA C++ ----===//
//
// One work item per position of self outside `dim` (a column): it copies
// its column of self into the result, then, where the column lies inside
// index's extent, adds src's elements along `dim` in order. Columns write
// disjoint elements, so the work items run in parallel without atomics and
// the sums are deterministic (the order ATen's CPU kernel adds in).
//
//===----------------------------------------------------------------------===//
#include "codegen/Emitters.h"

#include <fmt/format.h>

using namespace mlir;

namespace tgc::codegen {

namespace {

struct ScatterParts {
  std::string types[4]; ///< storage types of self, index, src, result
  std::string body;     ///< the column's work; `o` is the column number
  int64_t columns = 0;
};

std::string offsetOf(ArrayRef<int64_t> strides, int64_t dim, StringRef along) {
  std::string e = "0";
  for (size_t d = 0; d < strides.size(); ++d)
    e += fmt::format(" + ({}) * {}LL", d == size_t(dim) ? along.str() : "c" + std::to_string(d),
                     strides[d]);
  return e;
}

ScatterParts scatterParts(tgk::ScatterAddKernelOp k, const KernelDescriptor &desc,
                          Target target) {
  ScatterParts p;
  auto self = cast<RankedTensorType>(k.getSelf().getType());
  auto index = cast<RankedTensorType>(k.getIndex().getType());
  Type elt = self.getElementType();
  Value bufs[4] = {k.getSelf(), k.getIndex(), k.getSrc(), k.getResult()};
  for (int i = 0; i < 4; ++i)
    p.types[i] = detail::storageType(cast<ShapedType>(bufs[i].getType()).getElementType(), target);
  auto strides = [&](int i) {
    ArrayAttr a = i < 3 ? k.getInputStrides() : k.getResultStrides();
    return cast<DenseI64ArrayAttr>(a[i < 3 ? i : 0]).asArrayRef();
  };
  int64_t dim = k.getDim(), rank = self.getRank();
  p.columns = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (d != dim)
      p.columns *= self.getDimSize(d);
  detail::IndexSplit how;
  how.indent = "    ";
  how.name = [](size_t d) { return "c" + std::to_string(d); };
  how.skip = dim;
  std::string &b = p.body;
  b += detail::decomposeIndex("o", self.getShape(), how);
  std::string inIndex = "true";
  for (int64_t d = rank - 1; d >= 0; --d)
    if (d != dim)
      inIndex += fmt::format(" && c{} < {}LL", d, index.getDimSize(d));
  auto read = [&](const std::string &ref) { return detail::load(elt, target, ref); };
  auto write = [&](const std::string &v) { return detail::store(elt, target, v); };
  b += fmt::format("    for (long long j = 0; j < {}LL; ++j)\n      out0[{}] = in0[{}];\n",
                   self.getDimSize(dim), offsetOf(strides(3), dim, "j"),
                   offsetOf(strides(0), dim, "j"));
  b += fmt::format("    if ({}) {{\n", inIndex);
  b += fmt::format("      for (long long j = 0; j < {}LL; ++j) {{\n", index.getDimSize(dim));
  const IndexCheck &check = desc.checks.front(); // the descriptor's one check
  b += fmt::format("        const long long t = tgc_check_index(in1[{}], {}LL, false, tgc_err, {});\n",
                   offsetOf(strides(1), dim, "j"), check.size, check.id);
  std::string at = offsetOf(strides(3), dim, "t");
  b += fmt::format("        out0[{0}] = {1};\n      }}\n    }}\n", at,
                   write(read("out0[" + at + "]") + " + " +
                         read("in2[" + offsetOf(strides(2), dim, "j") + "]")));
  return p;
}

} // namespace

std::string emitCpuScatterAddKernel(tgk::ScatterAddKernelOp k, const DescribedKernel &d) {
  ScatterParts p = scatterParts(k, d.desc, Target::Cpu);
  std::string src = fmt::format("extern \"C\" void {}(void *const *buffers) {{\n", k.getSymName().str());
  for (int i = 0; i < 3; ++i)
    src += fmt::format("  const {0} *__restrict__ in{1} = (const {0} *)buffers[{1}];\n", p.types[i], i);
  src += fmt::format("  {0} *__restrict__ out0 = ({0} *)buffers[3];\n", p.types[3]);
  src += "  long long *tgc_err = (long long *)buffers[4];\n";
  src += fmt::format("#pragma omp parallel for schedule(static) if ({}LL >= 256)\n", p.columns);
  src += fmt::format("  for (long long o = 0; o < {}LL; ++o) {{\n", p.columns);
  return src + p.body + "  }\n}\n";
}

std::string emitCudaScatterAddKernel(tgk::ScatterAddKernelOp k, const DescribedKernel &d) {
  ScatterParts p = scatterParts(k, d.desc, Target::Cuda);
  std::string src = fmt::format(
      "extern \"C\" __global__ void __launch_bounds__({}) {}(const {} *__restrict__ in0, "
      "const {} *__restrict__ in1, const {} *__restrict__ in2, {} *__restrict__ out0, "
      "long long *__restrict__ tgc_err) {{\n",
      d.desc.launch.block, k.getSymName().str(), p.types[0], p.types[1], p.types[2], p.types[3]);
  src += fmt::format("  for (long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x; "
                     "o < {}LL; o += (long long)blockDim.x * gridDim.x) {{\n",
                     p.columns);
  return src + p.body + "  }\n}\n";
}

} // namespace tgc::codegen
