//===- Regions.cpp - regions of a TorchScript graph and their rewrite -----===//
#include "compiler/aot/Regions.h"

#include "runtime/SegmentOps.h"

#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/remove_mutation.h>

#include <algorithm>
#include <optional>
#include <set>

namespace tgc {

using namespace torch::jit;

namespace {

bool isTensor(Value *v) { return v->type()->kind() == c10::TypeKind::TensorType; }
bool isConstant(Value *v) { return v->node()->kind() == prim::Constant; }
bool isPlumbing(Node *n) {
  return n->kind() == prim::ListConstruct || n->kind() == prim::ListUnpack ||
         n->kind() == prim::TupleConstruct || n->kind() == prim::TupleUnpack;
}

/// Whether `n` is an ATen op whose first result aliases its first argument
/// without writing it (a view: slice, select, view, ...).
bool isViewOf0(Node *n) {
  const c10::FunctionSchema *schema = n->kind().is_aten() ? n->maybeSchema() : nullptr;
  if (!schema || schema->returns().empty() || schema->arguments().empty())
    return false;
  const c10::AliasInfo *out = schema->returns()[0].alias_info();
  const c10::AliasInfo *in = schema->arguments()[0].alias_info();
  return out && !out->isWrite() && in && !in->isWrite() && !schema->is_mutable();
}

} // namespace

std::optional<WriteChain> writeChain(Node *n) {
  const c10::FunctionSchema *schema = n->kind().is_aten() ? n->maybeSchema() : nullptr;
  if (!schema || !n->blocks().empty() || n->hasSideEffects())
    return std::nullopt;
  // One written argument, the first; the op's own results unused (they
  // alias it).
  for (size_t i = 0; i < schema->arguments().size(); ++i) {
    const c10::AliasInfo *a = schema->arguments()[i].alias_info();
    if (a && a->isWrite() && i != 0)
      return std::nullopt;
  }
  const c10::AliasInfo *first =
      schema->arguments().empty() ? nullptr : schema->arguments()[0].alias_info();
  if (!first || !first->isWrite() || n->inputs().empty())
    return std::nullopt;
  for (Value *out : n->outputs())
    if (out->hasUses())
      return std::nullopt;
  // Views, each read by the next one only, down to a fresh tensor made in
  // the same block: the write changes nothing outside that tensor.
  WriteChain chain;
  Value *v = n->input(0);
  while (isViewOf0(v->node()) && v->uses().size() == 1 && v->node()->owningBlock() == n->owningBlock()) {
    chain.views.push_back(v->node());
    v = v->node()->input(0);
  }
  Node *root = v->node();
  const c10::FunctionSchema *rs = root->kind().is_aten() ? root->maybeSchema() : nullptr;
  if (!rs || rs->is_mutable() || rs->returns().empty() || rs->returns()[0].alias_info() ||
      root->owningBlock() != n->owningBlock() || !isTensor(v))
    return std::nullopt;
  chain.root = root;
  return chain;
}

namespace {

/// Why `n` can never be inside a region, or "".
std::string staticReason(Node *n, bool chainWrite) {
  if (!n->blocks().empty())
    return "control flow; its blocks are cut into regions of their own";
  // List packing, a tensor's device or dtype (guarded) and a number made a
  // 0-d tensor (size arithmetic: the sizes are the guarded shapes) are
  // static in a region; capture answers their reads (aten::Int of such a
  // tensor) from the values it knows, as the JIT does.
  if (n->kind() == prim::ListConstruct || n->kind() == prim::ListUnpack ||
      n->kind() == prim::device || n->kind() == prim::dtype || n->kind() == prim::NumToTensor)
    return "";
  if (isPlumbing(n))
    return "packs or unpacks a tuple";
  if (!n->kind().is_aten())
    return "not an ATen op";
  if (n->hasSideEffects())
    return "has side effects";
  const c10::FunctionSchema *schema = n->maybeSchema();
  if (!schema)
    return "has no registered schema";
  if (schema->is_mutable() && !chainWrite)
    return "writes a tensor in place";
  return "";
}

void numberBlock(Block *b, std::map<Node *, int64_t> &out) {
  for (Node *n : b->nodes()) {
    int64_t next = out.size();
    out[n] = next;
    for (Block *sub : n->blocks())
      numberBlock(sub, out);
  }
}

void collectConstants(Block *b, std::vector<Node *> &out) {
  for (Node *n : b->nodes()) {
    if (n->kind() == prim::Constant)
      out.push_back(n);
    for (Block *sub : n->blocks())
      collectConstants(sub, out);
  }
}

class Partitioner {
public:
  Partitioner(Graph &graph, const std::map<int64_t, std::string> &excluded)
      : graph_(graph), excluded_(excluded), numbers_(numberNodes(graph)) {
    // Write chains as the graph stands before any region is rewritten
    // (rewriting moves a region's nodes into the branches of an `if`).
    for (auto [n, number] : numbers_)
      if (std::optional<WriteChain> chain = writeChain(n))
        chains_[n] = *chain;
  }
  void block(Block *b);
  Partition result;

private:
  std::string reasonFor(Node *n) const {
    auto it = excluded_.find(numbers_.at(n));
    return it != excluded_.end() ? it->second : staticReason(n, chains_.count(n) != 0);
  }
  void keep(Node *n, const std::string &reason, bool plumbing = false) {
    result.kept.push_back({n->kind().toQualString(), reason, plumbing || isPlumbing(n)});
  }
  void cut(const std::vector<Node *> &run);
  void finish(const std::vector<Node *> &run);
  void emit(const std::vector<Node *> &nodes);
  void rewrite(const Region &r);

  Graph &graph_;
  const std::map<int64_t, std::string> &excluded_;
  std::map<Node *, int64_t> numbers_;
  std::map<Node *, WriteChain> chains_;
};

void Partitioner::block(Block *b) {
  std::vector<Node *> nodes(b->nodes().begin(), b->nodes().end());
  std::vector<Node *> run;
  for (Node *n : nodes) {
    if (n->kind() == prim::Constant)
      continue;
    std::string reason = reasonFor(n);
    if (reason.empty()) {
      run.push_back(n);
      continue;
    }
    cut(run);
    run.clear();
    keep(n, reason);
    for (Block *sub : n->blocks())
      block(sub);
  }
  cut(run);
}

/// Splits a run of eligible nodes where a node reads a non-tensor value
/// computed outside the run (the host's), keeping that node TorchScript.
void Partitioner::cut(const std::vector<Node *> &run) {
  std::vector<Node *> current;
  std::set<Node *> members;
  for (Node *n : run) {
    bool hostInput = false;
    for (Value *in : n->inputs())
      hostInput |= !isTensor(in) && !isConstant(in) && !members.count(in->node());
    if (hostInput) {
      finish(current);
      current.clear();
      members.clear();
      keep(n, "reads a value computed outside a compiled region");
      continue;
    }
    current.push_back(n);
    members.insert(n);
  }
  finish(current);
}

/// Emits `run` as a region unless a node hands a non-tensor value (read by
/// the host) to nodes after it: that node stays TorchScript and the nodes
/// before and after it are cut again.
void Partitioner::finish(const std::vector<Node *> &run) {
  std::set<Node *> members(run.begin(), run.end());
  for (size_t p = 0; p < run.size(); ++p)
    for (Value *out : run[p]->outputs()) {
      if (isTensor(out))
        continue;
      for (const Use &u : out->uses())
        if (!members.count(u.user)) {
          finish(std::vector<Node *>(run.begin(), run.begin() + p));
          keep(run[p], "its result is read on the host");
          cut(std::vector<Node *>(run.begin() + p + 1, run.end()));
          return;
        }
    }
  emit(run);
}

void Partitioner::emit(const std::vector<Node *> &nodes) {
  std::set<Node *> members(nodes.begin(), nodes.end());
  Region r;
  bool work = false;
  for (Node *n : nodes) {
    // Tensor constants (frozen weights) are inputs too: the package keeps
    // them once, in module.pt, and hands them to the segment.
    for (Value *in : n->inputs())
      if (!members.count(in->node()) && (!isConstant(in) || isTensor(in)) &&
          std::find(r.inputs.begin(), r.inputs.end(), in) == r.inputs.end())
        r.inputs.push_back(in);
    for (Value *out : n->outputs()) {
      work |= isTensor(out) && n->kind().is_aten();
      for (const Use &u : out->uses())
        if (!members.count(u.user)) {
          r.outputs.push_back(out);
          break;
        }
    }
  }
  // A write joins a region only with the tensor it writes: the fresh
  // tensor and every view on the way there in the same region. Otherwise
  // the write and its views stay TorchScript (on the next partition).
  for (Node *n : nodes)
    if (auto found = chains_.find(n); found != chains_.end()) {
      const WriteChain *chain = &found->second;
      bool inside = members.count(chain->root) != 0;
      for (Node *view : chain->views)
        inside = inside && members.count(view);
      if (inside)
        continue;
      const std::string why = "writes a tensor created outside its compiled region";
      result.recut[numbers_.at(n)] = why;
      for (Node *view : chain->views)
        result.recut[numbers_.at(view)] = why;
    }
  if (!work || r.outputs.empty()) {
    for (Node *n : nodes)
      keep(n, "no tensor work to compile", /*plumbing=*/true);
    return;
  }
  r.id = result.regions.size();
  r.nodes = nodes;
  for (Node *n : nodes)
    r.numbers.push_back(numbers_.at(n));
  rewrite(r);
  result.regions.push_back(std::move(r));
}

void Partitioner::rewrite(const Region &r) {
  Graph &g = graph_;
  std::set<Node *> members(r.nodes.begin(), r.nodes.end());
  WithInsertPoint at(r.nodes.front());
  Value *list = g.insertNode(g.createList(TensorType::get(), r.inputs))->output();
  Value *id = g.insertConstant(r.id);
  Node *guard = g.insertNode(g.create(Symbol::fromQualString(kSegmentGuardOp), {id, list}, 1));
  guard->output()->setType(BoolType::get());
  Node *branch = g.insertNode(g.create(prim::If, {guard->output()}, r.outputs.size()));
  Block *compiled = branch->addBlock();
  Block *original = branch->addBlock();
  {
    WithInsertPoint inCompiled(compiled);
    Node *call = g.insertNode(g.create(Symbol::fromQualString(kRunSegmentOp), {id, list}, 1));
    call->output()->setType(ListType::ofTensors());
    Node *unpack = g.insertNode(g.createListUnpack(call->output(), r.outputs.size()));
    for (Value *v : unpack->outputs())
      compiled->registerOutput(v);
  }
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    Value *out = r.outputs[i];
    branch->output(i)->setType(TensorType::get());
    std::vector<Use> uses = out->uses();
    for (const Use &u : uses)
      if (!members.count(u.user))
        u.user->replaceInput(u.offset, branch->output(i));
  }
  for (Node *n : r.nodes)
    n->moveBefore(original->return_node());
  for (Value *out : r.outputs)
    original->registerOutput(out);
}

} // namespace

void prepareGraph(const std::shared_ptr<Graph> &graph) {
  RemoveTensorMutation(graph);
  EliminateDeadCode(graph);
  std::vector<Node *> constants;
  collectConstants(graph->block(), constants);
  Node *anchor = graph->block()->nodes().front();
  for (Node *c : constants)
    if (c != anchor)
      c->moveBefore(anchor);
}

std::map<Node *, int64_t> numberNodes(Graph &graph) {
  std::map<Node *, int64_t> out;
  numberBlock(graph.block(), out);
  return out;
}

Partition partitionGraph(Graph &graph, const std::map<int64_t, std::string> &excluded) {
  Partitioner p(graph, excluded);
  p.block(graph.block());
  return std::move(p.result);
}

} // namespace tgc
