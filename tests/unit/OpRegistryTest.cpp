// The op registry: one row per op, read by the tracer, importer, partitioner
// and docs; its pointwise rows name real tg ops and import through them.
#include "compiler/ops/OpRegistry.h"
#include "compiler/pipeline/Pipeline.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tgc {
namespace {

using ops::Lowering;

TEST(OpRegistry, NamesAreUniqueAndEveryLoweringIsUsed) {
  std::set<std::string> names;
  std::set<int> lowerings;
  for (const ops::OpInfo &r : ops::allOps()) {
    EXPECT_TRUE(names.insert(r.name).second) << "two rows for " << r.name;
    EXPECT_EQ(std::string(r.name).rfind("aten::", 0), 0u) << r.name;
    lowerings.insert(static_cast<int>(r.lowering));
    if (r.lowering == Lowering::Pointwise)
      EXPECT_GT(r.arity, 0) << r.name;
  }
  for (int l = 0; l < ops::kLoweringCount; ++l)
    EXPECT_TRUE(lowerings.count(l)) << "no row uses lowering "
                                    << ops::loweringName(static_cast<Lowering>(l));
}

TEST(OpRegistry, LoweringsNeedTheOverloadsOwnRowFactsFallBackToTheBareOp) {
  // sum.dim_DimnameList has no row: its facts are aten::sum's, its lowering
  // is an ATen call (aten::sum's full reduction would be wrong for it).
  EXPECT_EQ(ops::loweringOf("aten::sum", ""), Lowering::ReduceAll);
  EXPECT_EQ(ops::loweringOf("aten::sum", "dim_DimnameList"), Lowering::Extern);
  EXPECT_EQ(ops::loweringOf("aten::sum", "dim_IntList"), Lowering::Reduce);
  EXPECT_EQ(ops::recomputeOf("aten::add", "out"), ops::Recompute::Cheap);
  EXPECT_EQ(ops::loweringOf("aten::add", "out"), Lowering::Extern);
  EXPECT_EQ(ops::aliasOf("aten::squeeze", "dim"), ops::Alias::View);
  EXPECT_EQ(ops::aliasOf("aten::split", "sizes"), ops::Alias::Part);
  EXPECT_EQ(ops::find("aten::no_such_op", ""), nullptr);
  EXPECT_EQ(ops::hostUseOf("aten::no_such_op", ""), ops::HostUse::None);
}

// The lists the tracer, partitioner and importer kept before the registry
// (compiler/capture/Tracer.cpp, training/Partition.cpp, pipeline/Import.cpp):
// the registry must still say the same of each.
TEST(OpRegistry, KeepsWhatTheFormerOpListsSaid) {
  for (const char *op : {"aten::_local_scalar_dense", "aten::item", "aten::is_nonzero",
                         "aten::equal", "aten::allclose"})
    EXPECT_EQ(ops::hostUseOf(op, ""), ops::HostUse::ReadsValue) << op;
  for (const char *op : {"aten::nonzero", "aten::unique", "aten::_unique", "aten::_unique2",
                         "aten::unique_dim", "aten::unique_consecutive", "aten::masked_select",
                         "aten::repeat_interleave", "aten::bincount", "aten::argwhere",
                         "aten::nonzero_numpy", "aten::unique_dim_consecutive"})
    EXPECT_EQ(ops::hostUseOf(op, ""), ops::HostUse::DataDependentShape) << op;
  for (const char *op :
       {"aten::add", "aten::sub", "aten::mul", "aten::div", "aten::neg", "aten::relu", "aten::exp",
        "aten::log", "aten::log1p", "aten::expm1", "aten::tanh", "aten::sigmoid", "aten::sqrt",
        "aten::rsqrt", "aten::abs", "aten::erf", "aten::sin", "aten::cos", "aten::pow",
        "aten::maximum", "aten::minimum", "aten::clamp", "aten::clamp_min", "aten::clamp_max",
        "aten::where", "aten::masked_fill", "aten::gelu", "aten::silu", "aten::mish",
        "aten::hardswish", "aten::hardsigmoid",
        "aten::softplus", "aten::leaky_relu", "aten::hardtanh", "aten::reciprocal", "aten::eq",
        "aten::ne", "aten::lt", "aten::le", "aten::gt", "aten::ge", "aten::logical_not",
        "aten::logical_and", "aten::logical_or", "aten::floor", "aten::ceil", "aten::round",
        "aten::trunc", "aten::sign", "aten::_to_copy", "aten::clone", "aten::fill",
        "aten::zeros_like", "aten::ones_like", "aten::full_like", "aten::scalar_tensor",
        "aten::zeros", "aten::ones", "aten::full", "aten::arange", "aten::triu", "aten::tril",
        "aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias", "aten::alias",
        "aten::detach", "aten::expand", "aten::permute", "aten::transpose", "aten::t",
        "aten::unsqueeze", "aten::squeeze", "aten::slice", "aten::select", "aten::split",
        "aten::split_with_sizes", "aten::unbind", "aten::lift_fresh"})
    EXPECT_EQ(ops::recomputeOf(op, ""), ops::Recompute::Cheap) << op;
  for (const char *op : {"aten::mm", "aten::convolution", "aten::sum", "aten::_softmax",
                         "aten::native_layer_norm", "aten::embedding"})
    EXPECT_EQ(ops::recomputeOf(op, ""), ops::Recompute::Never) << op;
  for (const char *op :
       {"aten::view", "aten::_unsafe_view", "aten::reshape", "aten::_reshape_alias", "aten::alias",
        "aten::unsqueeze", "aten::squeeze", "aten::permute", "aten::transpose", "aten::t",
        "aten::expand", "aten::slice", "aten::select", "aten::as_strided", "aten::diagonal",
        "aten::unfold", "aten::detach", "aten::narrow", "aten::view_as_real",
        "aten::view_as_complex", "aten::unflatten", "aten::movedim", "aten::swapaxes",
        "aten::lift_fresh"})
    EXPECT_EQ(ops::aliasOf(op, ""), ops::Alias::View) << op;
  for (const char *op : {"aten::split", "aten::split_with_sizes", "aten::unbind",
                         "aten::unsafe_split", "aten::unsafe_split_with_sizes", "aten::chunk",
                         "aten::unsafe_chunk"})
    EXPECT_EQ(ops::aliasOf(op, ""), ops::Alias::Part) << op;
  for (const char *op : {"aten::add_", "aten::mul_", "aten::relu_", "aten::masked_fill_",
                         "aten::scatter_add_"})
    EXPECT_EQ(ops::find(op, "Tensor")->lowering, Lowering::InPlace) << op;
}

/// A one-node segment applying `row` to random-shaped inputs of `dtype`.
Segment pointwiseSegment(const ops::OpInfo &row, DType dtype) {
  Segment s;
  TensorSpec spec{{3, 5}, {5, 1}, dtype};
  std::string name = row.name;
  size_t dot = name.find('.');
  SegmentNode n{name.substr(0, dot), dot == std::string::npos ? "" : name.substr(dot + 1)};
  for (int i = 0; i < row.arity; ++i) {
    s.values.push_back(spec);
    s.inputs.push_back(i);
    ArgValue a;
    a.kind = ArgValue::Tensor;
    a.tensors = {i};
    n.args.push_back(a);
  }
  s.values.push_back(spec);
  n.outputs = {row.arity};
  s.nodes = {n};
  s.outputs = {row.arity};
  return s;
}

TEST(OpRegistry, EveryPointwiseRowImportsAsItsTgOp) {
  int checked = 0;
  for (const ops::OpInfo &r : ops::allOps()) {
    if (r.lowering != Lowering::Pointwise)
      continue;
    std::string tgOp = r.variant;
    bool integer = tgOp == "tg.and" || tgOp == "tg.or" || tgOp == "tg.xor" || tgOp == "tg.shl" ||
                   tgOp == "tg.shr";
    PipelineResult p = runPipeline(pointwiseSegment(r, integer ? DType::Int32 : DType::Float32));
    ASSERT_TRUE(p.ok) << r.name << ": " << p.error;
    EXPECT_NE(p.importedIR.find(tgOp + " "), std::string::npos) << r.name << "\n" << p.importedIR;
    EXPECT_EQ(p.plan.externs.size(), 0u) << r.name << " should not be an ATen call";
    ++checked;
  }
  EXPECT_GT(checked, 40);
}

TEST(OpRegistry, FloatOnlyRowsStayATenCallsOnIntegers) {
  const ops::OpInfo *floor = ops::find("aten::floor", "");
  ASSERT_NE(floor, nullptr);
  ASSERT_EQ(floor->dtypes, ops::Dtypes::FloatOnly);
  PipelineResult p = runPipeline(pointwiseSegment(*floor, DType::Int32));
  ASSERT_TRUE(p.ok) << p.error;
  ASSERT_EQ(p.plan.externs.size(), 1u);
  EXPECT_EQ(p.plan.externs[0].op, "aten::floor");
}

TEST(OpRegistry, DocsListEveryRow) {
  std::string doc = ops::opsMarkdown();
  for (const ops::OpInfo &r : ops::allOps())
    EXPECT_NE(doc.find(std::string("`") + r.name + "`"), std::string::npos) << r.name;
}

} // namespace
} // namespace tgc
