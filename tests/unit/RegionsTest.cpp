// tgc-aot's region partitioner (compiler/aot/Regions.h) on small TorchScript
// graphs: size arithmetic (prim::NumToTensor) and in-place writes into fresh
// tensors compile inside a region; a write that would be split from the
// tensor it writes asks for a re-cut.
#include "compiler/aot/Regions.h"

#include <gtest/gtest.h>
#include <torch/csrc/jit/ir/irparser.h>

#include <memory>
#include <string>

namespace tgc {
namespace {

using torch::jit::Graph;
using torch::jit::Node;

std::shared_ptr<Graph> parse(const std::string &ir) {
  auto g = std::make_shared<Graph>();
  torch::jit::parseIR(ir, g.get());
  return g;
}

Node *find(Graph &g, const std::string &op, int nth = 0) {
  for (Node *n : g.nodes())
    if (n->kind().toQualString() == op && nth-- == 0)
      return n;
  ADD_FAILURE() << "no " << op << " in the graph";
  return nullptr;
}

/// A channel-shuffle-like program: a fresh tensor written through a slice,
/// and a size turned into a tensor and multiplied in.
const char *kFreshWrite = R"IR(
graph(%x : Float(4, 8)):
  %none : NoneType = prim::Constant()
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %four : int = prim::Constant[value=4]()
  %eight : int = prim::Constant[value=8]()
  %false : bool = prim::Constant[value=0]()
  %size : int[] = prim::ListConstruct(%four, %eight)
  %z : Tensor = aten::zeros(%size, %none, %none, %none, %none)
  %s : Tensor = aten::slice(%z, %one, %zero, %two, %one)
  %xs : Tensor = aten::slice(%x, %one, %zero, %two, %one)
  %c : Tensor = aten::copy_(%s, %xs, %false)
  %n : int = aten::size(%x, %zero)
  %t : Tensor = prim::NumToTensor(%n)
  %y : Tensor = aten::mul(%z, %t)
  return (%y)
)IR";

TEST(Regions, WriteIntoAFreshTensorThroughAViewIsAChain) {
  auto g = parse(kFreshWrite);
  std::optional<WriteChain> chain = writeChain(find(*g, "aten::copy_"));
  ASSERT_TRUE(chain.has_value());
  EXPECT_EQ(chain->root, find(*g, "aten::zeros"));
  ASSERT_EQ(chain->views.size(), 1u);
  EXPECT_EQ(chain->views[0], find(*g, "aten::slice", 0));
}

TEST(Regions, SizeArithmeticAndFreshWritesCompileInOneRegion) {
  auto g = parse(kFreshWrite);
  Partition p = partitionGraph(*g, {});
  EXPECT_TRUE(p.recut.empty());
  ASSERT_EQ(p.regions.size(), 1u);
  for (const KeptNode &k : p.kept)
    EXPECT_TRUE(k.plumbing) << k.op << " stays TorchScript: " << k.reason;
  int numToTensor = 0, copies = 0;
  for (Node *n : p.regions[0].nodes) {
    numToTensor += n->kind().toQualString() == std::string("prim::NumToTensor");
    copies += n->kind().toQualString() == std::string("aten::copy_");
  }
  EXPECT_EQ(numToTensor, 1);
  EXPECT_EQ(copies, 1);
}

TEST(Regions, WriteIntoAGraphInputStaysTorchScript) {
  auto g = parse(R"IR(
graph(%x : Float(4, 8), %y : Float(4, 2)):
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %false : bool = prim::Constant[value=0]()
  %s : Tensor = aten::slice(%x, %one, %zero, %two, %one)
  %c : Tensor = aten::copy_(%s, %y, %false)
  %r : Tensor = aten::relu(%x)
  return (%r)
)IR");
  EXPECT_FALSE(writeChain(find(*g, "aten::copy_")).has_value());
  Partition p = partitionGraph(*g, {});
  bool kept = false;
  for (const KeptNode &k : p.kept)
    kept |= k.op == "aten::copy_" && k.reason == "writes a tensor in place";
  EXPECT_TRUE(kept);
}

TEST(Regions, ViewReadElsewhereIsNotAChain) {
  // The slice is read again after the write: the write is visible through
  // an alias the chain does not own.
  auto g = parse(R"IR(
graph(%x : Float(4, 8)):
  %none : NoneType = prim::Constant()
  %zero : int = prim::Constant[value=0]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %false : bool = prim::Constant[value=0]()
  %z : Tensor = aten::zeros_like(%x, %none, %none, %none, %none, %none)
  %s : Tensor = aten::slice(%z, %one, %zero, %two, %one)
  %c : Tensor = aten::copy_(%s, %x, %false)
  %r : Tensor = aten::relu(%s)
  return (%r)
)IR");
  EXPECT_FALSE(writeChain(find(*g, "aten::copy_")).has_value());
}

TEST(Regions, WriteSplitFromItsTensorAsksForARecut) {
  auto g = parse(kFreshWrite);
  std::map<Node *, int64_t> numbers = numberNodes(*g);
  const int64_t slice = numbers.at(find(*g, "aten::slice", 0));
  const int64_t copy = numbers.at(find(*g, "aten::copy_"));
  // The view is kept out (as a capture break would): the write would land
  // in a region without the tensor it writes.
  Partition p = partitionGraph(*g->copy(), {{slice, "excluded by the test"}});
  std::string keptOps;
  for (const KeptNode &k : p.kept)
    keptOps += k.op + ": " + k.reason + "\n";
  ASSERT_EQ(p.recut.count(copy), 1u) << "kept:\n" << keptOps << p.regions.size() << " regions";
  EXPECT_EQ(p.recut.at(copy), "writes a tensor created outside its compiled region");
  // With the write excluded as asked, the partition is usable.
  std::map<int64_t, std::string> excluded{{slice, "excluded by the test"}};
  excluded.insert(p.recut.begin(), p.recut.end());
  Partition again = partitionGraph(*g->copy(), excluded);
  EXPECT_TRUE(again.recut.empty());
  bool kept = false;
  for (const KeptNode &k : again.kept)
    kept |= k.op == "aten::copy_";
  EXPECT_TRUE(kept);
}

} // namespace
} // namespace tgc
