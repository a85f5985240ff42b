//===- Attention.cpp - decomposed attention as one SDPA call --------------===//
#include "compiler/capture/Attention.h"

#include "compiler/ops/OpRegistry.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <unordered_set>

namespace tgc {

namespace {

std::vector<int64_t> contiguous(const std::vector<int64_t> &sizes) {
  std::vector<int64_t> s(sizes.size(), 1);
  for (int d = (int)sizes.size() - 2; d >= 0; --d)
    s[d] = s[d + 1] * std::max<int64_t>(sizes[d + 1], 1);
  return s;
}

bool isContiguous(const TensorSpec &s) {
  std::vector<int64_t> want = contiguous(s.sizes);
  for (size_t d = 0; d < s.sizes.size(); ++d)
    if (s.sizes[d] > 1 && s.strides[d] != want[d])
      return false;
  return true;
}

/// The strides ATen's empty_like gives a tensor of `s`'s layout: `s`'s own
/// when it is dense, else dense strides in the order of `s`'s (innermost
/// the smallest stride; ties to the smaller size, then the later dim).
/// ATen's CPU flash attention allocates its output so.
std::vector<int64_t> denseLike(const TensorSpec &s) {
  // Dims of size 1 can have any stride: they are left out of the order.
  const int r = (int)s.sizes.size();
  std::vector<int> perm; // innermost first
  for (int d = r - 1; d >= 0; --d)
    if (s.sizes[d] != 1)
      perm.push_back(d);
  std::stable_sort(perm.begin(), perm.end(), [&](int a, int b) {
    if (s.strides[a] != s.strides[b])
      return s.strides[a] < s.strides[b];
    return s.sizes[a] < s.sizes[b];
  });
  std::vector<int64_t> strides(r, 1);
  int64_t step = 1;
  for (int d : perm) {
    strides[d] = step;
    step *= std::max<int64_t>(s.sizes[d], 1);
  }
  for (int d = 0; d < r; ++d)
    if (s.sizes[d] == 1)
      strides[d] = step;
  return strides;
}

/// c10::ScalarType's numbering (stable: TorchScript stores it as an int).
int64_t scalarTypeCode(DType t) {
  switch (t) {
  case DType::UInt8:
    return 0;
  case DType::Int8:
    return 1;
  case DType::Int16:
    return 2;
  case DType::Int32:
    return 3;
  case DType::Int64:
    return 4;
  case DType::Float16:
    return 5;
  case DType::Float32:
    return 6;
  case DType::Float64:
    return 7;
  case DType::Bool:
    return 11;
  case DType::BFloat16:
    return 15;
  }
  return 6;
}

/// A number argument (a Scalar, or a wrapped number of a Tensor overload).
bool numberOf(const ArgValue &a, double &v) {
  switch (a.kind) {
  case ArgValue::Double:
    v = a.d;
    return true;
  case ArgValue::Int:
    v = double(a.i);
    return true;
  case ArgValue::ScalarTensor:
    v = a.isFloat ? a.d : double(a.i);
    return true;
  default:
    return false;
  }
}

/// One decomposed attention found from its first bmm.
struct Match {
  int bmm1 = -1, softmax = -1, bmm2 = -1; ///< node indices
  int q = -1, k = -1, v = -1;             ///< q, k, v (value ids)
  int scores = -1;                        ///< the softmax's input
  double scale = 1;
  int adds = 0;
  bool scaledAfterAdd = false, reshapedAfterAdd = false;
  int mask = -1;         ///< the one mask added, when there is one
  int maskedScores = -1; ///< the value it was added to
  bool direct = true;    ///< that mask is SDPA's attn_mask as it is
  std::vector<int> pure; ///< nodes of the pattern: removable once dead
};

class AttentionFuser {
public:
  explicit AttentionFuser(Segment &seg) : seg_(seg) {}

  int run() {
    int fused = 0;
    std::unordered_set<int> tried; // first bmms' results that did not match
    for (bool again = true; again;) {
      again = false;
      index();
      for (size_t i = 0; i < seg_.nodes.size(); ++i) {
        const SegmentNode &n = seg_.nodes[i];
        if (n.op != "aten::bmm" || n.outputs.size() != 1 || tried.count(n.outputs[0]))
          continue;
        Match m;
        if (!match((int)i, m)) {
          tried.insert(n.outputs[0]);
          continue;
        }
        rewrite(m);
        fused++;
        again = true;
        break;
      }
    }
    return fused;
  }

private:
  const TensorSpec &spec(int v) const { return seg_.values[v]; }
  int rank(int v) const { return (int)spec(v).sizes.size(); }

  void index() {
    producer_.assign(seg_.values.size(), -1);
    readers_.assign(seg_.values.size(), {});
    for (size_t i = 0; i < seg_.nodes.size(); ++i) {
      const SegmentNode &n = seg_.nodes[i];
      for (int o : n.outputs)
        if (o >= 0)
          producer_[o] = (int)i;
      for (int t : n.tensorArgs())
        readers_[t].push_back((int)i);
    }
    isOutput_.clear();
    isOutput_.insert(seg_.outputs.begin(), seg_.outputs.end());
  }

  /// The one node reading `v`, or -1 (also when `v` is returned).
  int soleReader(int v) const {
    if (isOutput_.count(v) || readers_[v].size() != 1)
      return -1;
    return readers_[v][0];
  }

  static bool tensorAt(const SegmentNode &n, size_t k, int v) {
    return n.args.size() > k && n.args[k].kind == ArgValue::Tensor && n.args[k].tensors[0] == v;
  }

  /// An op that keeps its argument 0's elements in row-major order and
  /// changes at most its shape: views, reshapes, copies, same-size expands.
  bool isReshape(const SegmentNode &n) const {
    if (n.mutates || n.outputs.size() != 1 || n.outputs[0] < 0 || n.args.empty() ||
        n.args[0].kind != ArgValue::Tensor || n.args[0].tensors[0] < 0)
      return false;
    const TensorSpec &in = spec(n.args[0].tensors[0]), &out = spec(n.outputs[0]);
    if (in.dtype != out.dtype || in.numel() != out.numel())
      return false;
    const std::string &op = n.op;
    if ((op == "aten::view" && n.overload.empty()) || op == "aten::_unsafe_view" ||
        op == "aten::reshape" || op == "aten::_reshape_alias")
      return true;
    if (op == "aten::clone" || op == "aten::contiguous" || op == "aten::alias" ||
        op == "aten::expand")
      return in.sizes == out.sizes;
    return false;
  }

  /// A transpose of the last two dims.
  bool isLastTwoTranspose(const SegmentNode &n) const {
    if (n.outputs.size() != 1 || n.outputs[0] < 0 || n.args.empty() ||
        n.args[0].kind != ArgValue::Tensor)
      return false;
    const int r = rank(n.args[0].tensors[0]);
    auto norm = [r](int64_t d) { return d < 0 ? d + r : d; };
    if (n.op == "aten::transpose" && n.overload == "int" && n.args.size() == 3 &&
        n.args[1].kind == ArgValue::Int && n.args[2].kind == ArgValue::Int) {
      std::set<int64_t> dims = {norm(n.args[1].i), norm(n.args[2].i)};
      return r >= 2 && dims == std::set<int64_t>{r - 2, r - 1};
    }
    if (n.op == "aten::permute" && n.args.size() == 2 && n.args[1].kind == ArgValue::IntList &&
        (int)n.args[1].ints.size() == r && r >= 2) {
      for (int d = 0; d < r - 2; ++d)
        if (norm(n.args[1].ints[d]) != d)
          return false;
      return norm(n.args[1].ints[r - 2]) == r - 1 && norm(n.args[1].ints[r - 1]) == r - 2;
    }
    return false;
  }

  /// q, k or v as SDPA takes it: 3-d or 4-d, last two dims (a, b), unit
  /// stride in the last, no empty dim.
  bool fits(int v, int64_t a, int64_t b) const {
    const TensorSpec &s = spec(v);
    const int r = (int)s.sizes.size();
    if (r != 3 && r != 4 || s.sizes[r - 2] != a || s.sizes[r - 1] != b)
      return false;
    for (int64_t d : s.sizes)
      if (d <= 0)
        return false;
    return s.sizes[r - 1] == 1 || s.strides[r - 1] == 1;
  }

  /// The earliest value behind `v` through reshapes that fits (a, b); -1.
  int rootOf(int v, int64_t a, int64_t b, Match &m) const {
    int best = -1;
    for (;;) {
      if (fits(v, a, b))
        best = v;
      int p = producer_[v];
      if (p < 0 || !isReshape(seg_.nodes[p]))
        return best;
      m.pure.push_back(p);
      v = seg_.nodes[p].args[0].tensors[0];
    }
  }

  /// k behind k^T (`kt`, last dims (e, s)): reshapes, then a transpose.
  int keyOf(int kt, int64_t e, int64_t s, Match &m) const {
    for (int v = kt;;) {
      int p = producer_[v];
      if (p < 0)
        return -1;
      const SegmentNode &n = seg_.nodes[p];
      if (isLastTwoTranspose(n)) {
        m.pure.push_back(p);
        return rootOf(n.args[0].tensors[0], s, e, m);
      }
      if (!isReshape(n))
        return -1;
      m.pure.push_back(p);
      v = n.args[0].tensors[0];
    }
  }

  /// `n` multiplies or divides `cur` by a number: its factor.
  bool scaleOf(const SegmentNode &n, int cur, double &f) const {
    const bool mul = n.op == "aten::mul", div = n.op == "aten::div";
    if (!(mul || div) || !(n.overload == "Tensor" || n.overload == "Scalar") ||
        n.args.size() != 2 || n.outputs.size() != 1 || n.outputs[0] < 0)
      return false;
    double v = 0;
    if (tensorAt(n, 0, cur) && numberOf(n.args[1], v)) {
    } else if (mul && tensorAt(n, 1, cur) && numberOf(n.args[0], v)) {
    } else {
      return false;
    }
    if (!std::isfinite(v) || (div && v == 0) || spec(n.outputs[0]).dtype != spec(cur).dtype ||
        spec(n.outputs[0]).sizes != spec(cur).sizes)
      return false;
    f = div ? 1.0 / v : v;
    return true;
  }

  /// `n` adds a tensor of `cur`'s dtype, broadcast to `cur`'s shape, to
  /// `cur` (alpha 1): that tensor.
  int addendOf(const SegmentNode &n, int cur) const {
    if (n.op != "aten::add" || n.overload != "Tensor" || n.args.size() != 3 ||
        n.outputs.size() != 1 || n.outputs[0] < 0)
      return -1;
    double alpha = 0;
    if (!numberOf(n.args[2], alpha) || alpha != 1 || n.args[0].kind != ArgValue::Tensor ||
        n.args[1].kind != ArgValue::Tensor)
      return -1;
    int a = n.args[0].tensors[0], b = n.args[1].tensors[0];
    if (a == b || (a != cur && b != cur))
      return -1;
    int other = a == cur ? b : a;
    const TensorSpec &c = spec(cur), &o = spec(other);
    if (o.dtype != c.dtype || spec(n.outputs[0]).sizes != c.sizes ||
        spec(n.outputs[0]).dtype != c.dtype || o.sizes.size() > c.sizes.size())
      return -1;
    const size_t shift = c.sizes.size() - o.sizes.size();
    for (size_t d = 0; d < o.sizes.size(); ++d)
      if (o.sizes[d] != 1 && o.sizes[d] != c.sizes[d + shift])
        return -1;
    return other;
  }

  bool isSoftmax(const SegmentNode &n, int cur) const {
    if (n.outputs.size() != 1 || n.outputs[0] < 0 || !tensorAt(n, 0, cur) || n.args.size() != 3 ||
        n.args[1].kind != ArgValue::Int)
      return false;
    const int r = rank(cur);
    const int64_t dim = n.args[1].i < 0 ? n.args[1].i + r : n.args[1].i;
    if (dim != r - 1 || spec(n.outputs[0]).dtype != spec(cur).dtype)
      return false;
    if (n.op == "aten::_softmax")
      return n.args[2].kind == ArgValue::Bool && !n.args[2].b;
    return n.op == "aten::softmax" && n.overload == "int" && n.args[2].kind == ArgValue::None;
  }

  bool match(int bmm1, Match &m) const {
    const SegmentNode &b1 = seg_.nodes[bmm1];
    if (b1.args.size() != 2 || b1.args[0].kind != ArgValue::Tensor ||
        b1.args[1].kind != ArgValue::Tensor)
      return false;
    m.bmm1 = bmm1;
    const int r = b1.outputs[0];
    const TensorSpec &qs = spec(b1.args[0].tensors[0]), &kts = spec(b1.args[1].tensors[0]);
    const TensorSpec &rs = spec(r);
    if (qs.sizes.size() != 3 || kts.sizes.size() != 3 || rs.sizes.size() != 3)
      return false;
    const DType dtype = rs.dtype;
    if (dtype != DType::Float32 && dtype != DType::Float64 && dtype != DType::BFloat16 &&
        dtype != DType::Float16)
      return false;
    const int64_t batch = rs.sizes[0], l = rs.sizes[1], s = rs.sizes[2], e = qs.sizes[2];
    // The scores, from q k^T to the softmax.
    int cur = r;
    for (;;) {
      int n = soleReader(cur);
      if (n < 0)
        return false;
      const SegmentNode &node = seg_.nodes[n];
      if (isSoftmax(node, cur)) {
        m.softmax = n;
        m.scores = cur;
        break;
      }
      double f = 1;
      int addend = -1;
      if (isReshape(node)) {
        m.reshapedAfterAdd = m.reshapedAfterAdd || m.adds > 0;
      } else if (scaleOf(node, cur, f)) {
        m.scale *= f;
        m.scaledAfterAdd = m.scaledAfterAdd || m.adds > 0;
      } else if ((addend = addendOf(node, cur)) >= 0) {
        m.adds++;
        m.mask = addend;
        m.maskedScores = cur;
      } else {
        return false;
      }
      m.pure.push_back(n);
      cur = node.outputs[0];
    }
    // Softmax over the rows of q k^T.
    if (spec(m.scores).sizes.back() != s)
      return false;
    // Its result, through reshapes, is the second bmm's left operand.
    cur = seg_.nodes[m.softmax].outputs[0];
    for (;;) {
      int n = soleReader(cur);
      if (n < 0)
        return false;
      const SegmentNode &node = seg_.nodes[n];
      if (node.op == "aten::bmm" && node.args.size() == 2 && tensorAt(node, 0, cur) &&
          node.args[1].kind == ArgValue::Tensor && node.outputs.size() == 1 &&
          node.outputs[0] >= 0) {
        m.bmm2 = n;
        break;
      }
      if (!isReshape(node))
        return false;
      m.pure.push_back(n);
      cur = node.outputs[0];
    }
    const SegmentNode &b2 = seg_.nodes[m.bmm2];
    const TensorSpec &ps = spec(cur), &vs = spec(b2.args[1].tensors[0]);
    if (ps.sizes != std::vector<int64_t>{batch, l, s} || vs.sizes.size() != 3 ||
        vs.sizes[0] != batch || vs.sizes[1] != s || vs.dtype != dtype)
      return false;
    const int64_t ev = vs.sizes[2];
    // ATen's CPU flash kernel wants one head size for q, k and v (the
    // composite would take the math path: the same bmms).
    if (seg_.device.rfind("cpu", 0) == 0 && ev != e)
      return false;
    m.q = rootOf(b1.args[0].tensors[0], l, e, m);
    m.k = keyOf(b1.args[1].tensors[0], e, s, m);
    m.v = rootOf(b2.args[1].tensors[0], s, ev, m);
    if (m.q < 0 || m.k < 0 || m.v < 0)
      return false;
    // q, k and v of one rank and one batch shape.
    const TensorSpec &q = spec(m.q), &k = spec(m.k), &v = spec(m.v);
    if (q.sizes.size() != k.sizes.size() || q.sizes.size() != v.sizes.size())
      return false;
    int64_t lead = 1;
    for (size_t d = 0; d + 2 < q.sizes.size(); ++d) {
      if (k.sizes[d] != q.sizes[d] || v.sizes[d] != q.sizes[d])
        return false;
      lead *= q.sizes[d];
    }
    if (lead != batch || q.dtype != dtype || k.dtype != dtype || v.dtype != dtype)
      return false;
    // The mask as it is, when it is the one addend of the scores in q, k
    // and v's batch shape; else the chain's result from zeros, which must
    // view as [b, h, l, s].
    std::vector<int64_t> scores(q.sizes.begin(), q.sizes.end() - 2);
    scores.push_back(l);
    scores.push_back(s);
    m.direct = m.adds == 0 || (m.adds == 1 && !m.scaledAfterAdd && !m.reshapedAfterAdd &&
                               spec(m.maskedScores).sizes == scores &&
                               spec(m.mask).sizes.back() == s && spec(m.mask).strides.back() == 1);
    if (!m.direct) {
      if (scores.size() == 3)
        scores.insert(scores.begin(), 1);
      if (spec(m.scores).sizes != scores && !isContiguous(spec(m.scores)))
        return false;
    }
    // Moving the reads of q, k, v and the mask to the second bmm: nothing in
    // between may write them.
    std::unordered_set<int> bases = {baseOf(m.q), baseOf(m.k), baseOf(m.v)};
    if (m.mask >= 0)
      bases.insert(baseOf(m.mask));
    for (int i = bmm1; i < m.bmm2; ++i)
      if (seg_.nodes[i].mutates)
        for (int t : seg_.nodes[i].tensorArgs())
          if (bases.count(baseOf(t)))
            return false;
    return true;
  }

  /// The tensor whose memory `v` views.
  int baseOf(int v) const {
    for (;;) {
      int p = producer_[v];
      if (p < 0)
        return v;
      const SegmentNode &n = seg_.nodes[p];
      if (ops::aliasOf(n.op, n.overload) == ops::Alias::None || n.args.empty() ||
          n.args[0].kind != ArgValue::Tensor)
        return v;
      v = n.args[0].tensors[0];
    }
  }

  int newValue(TensorSpec s) {
    seg_.values.push_back(std::move(s));
    return (int)seg_.values.size() - 1;
  }

  /// `v` with a leading dim of 1 (a view: valid for any layout).
  int unsqueezed(int v, std::vector<SegmentNode> &out) {
    TensorSpec s = spec(v);
    const int64_t stride = s.sizes.empty() ? 1 : s.sizes[0] * s.strides[0];
    s.sizes.insert(s.sizes.begin(), 1);
    s.strides.insert(s.strides.begin(), stride);
    SegmentNode n;
    n.op = "aten::unsqueeze";
    n.args = {ArgValue::ofTensor(v), ArgValue::ofInt(0)};
    n.outputs = {newValue(std::move(s))};
    out.push_back(n);
    return n.outputs[0];
  }

  int atRank4(int v, std::vector<SegmentNode> &out) {
    while (rank(v) < 4)
      v = unsqueezed(v, out);
    return v;
  }

  void rewrite(const Match &m) {
    const bool cpu = seg_.device.rfind("cpu", 0) == 0;
    const int o3 = seg_.nodes[m.bmm2].outputs[0];
    const DType dtype = spec(o3).dtype;
    std::vector<SegmentNode> before; // placed before the second bmm's place
    const int q = atRank4(m.q, before), k = atRank4(m.k, before), v = atRank4(m.v, before);
    const std::vector<int64_t> &qs = spec(q).sizes;
    const int64_t b = qs[0], h = qs[1], l = qs[2], ev = spec(v).sizes[3];
    std::vector<int64_t> scoreSizes = {b, h, l, spec(k).sizes[2]};
    // The mask: the one addend as it is, or what the score chain computes
    // when fed zeros.
    int mask = -1;
    const bool zeros = !m.direct;
    if (m.adds > 0 && m.direct) {
      mask = atRank4(m.mask, before);
    } else if (zeros) {
      mask = m.scores;
      if (spec(mask).sizes != scoreSizes) {
        TensorSpec s{scoreSizes, contiguous(scoreSizes), dtype};
        SegmentNode view;
        view.op = "aten::view";
        view.args = {ArgValue::ofTensor(mask), ArgValue::ofInts(scoreSizes)};
        view.outputs = {newValue(std::move(s))};
        before.push_back(view);
        mask = view.outputs[0];
      }
    }
    // SDPA, then its result in the layout the bmm returned.
    SegmentNode sdpa;
    ArgValue maskArg = mask >= 0 ? ArgValue::ofTensor(mask) : ArgValue();
    std::vector<int64_t> outSizes = {b, h, l, ev};
    if (cpu) {
      // ATen's CPU kernel returns its result in q's layout (a transposed
      // [b, l, h, e] for projections split into heads), and a logsumexp
      // (float for half types) nothing reads.
      TensorSpec out{outSizes, denseLike(spec(q)), dtype};
      DType lseType = dtype == DType::Float64 ? DType::Float64 : DType::Float32;
      TensorSpec lse{{b, h, l}, {l * h, 1, h}, lseType};
      sdpa.op = "aten::_scaled_dot_product_flash_attention_for_cpu";
      sdpa.args = {ArgValue::ofTensor(q),      ArgValue::ofTensor(k),   ArgValue::ofTensor(v),
                   ArgValue::ofDouble(0.0),    ArgValue::ofBool(false), maskArg,
                   ArgValue::ofDouble(m.scale)};
      sdpa.outputs = {newValue(out), newValue(lse)};
    } else {
      sdpa.op = "aten::scaled_dot_product_attention";
      sdpa.args = {ArgValue::ofTensor(q),       ArgValue::ofTensor(k),
                   ArgValue::ofTensor(v),       maskArg,
                   ArgValue::ofDouble(0.0),     ArgValue::ofBool(false),
                   ArgValue::ofDouble(m.scale), ArgValue::ofBool(false)};
      sdpa.outputs = {newValue(TensorSpec{outSizes, contiguous(outSizes), dtype})};
    }
    before.push_back(sdpa);
    int result = sdpa.outputs[0];
    if (!isContiguous(spec(result))) {
      SegmentNode copy;
      copy.op = "aten::clone";
      copy.args = {ArgValue::ofTensor(result), ArgValue::ofInt(0) /* contiguous_format */};
      copy.outputs = {newValue(TensorSpec{outSizes, contiguous(outSizes), dtype})};
      before.push_back(copy);
      result = copy.outputs[0];
    }
    SegmentNode view;
    view.op = "aten::view";
    view.args = {ArgValue::ofTensor(result), ArgValue::ofInts(spec(o3).sizes)};
    view.outputs = {o3};
    seg_.values[o3].strides = contiguous(spec(o3).sizes);

    std::vector<SegmentNode> nodes;
    std::unordered_set<int> pure(m.pure.begin(), m.pure.end());
    pure.insert(m.bmm1);
    for (int i = 0; i < (int)seg_.nodes.size(); ++i) {
      if (i == m.softmax)
        continue;
      if (i == m.bmm1 && zeros) {
        // The chain computes the mask from zeros instead of q k^T.
        const int r = seg_.nodes[i].outputs[0];
        SegmentNode z;
        z.op = "aten::zeros";
        z.args = {ArgValue::ofInts(spec(r).sizes), ArgValue::ofInt(scalarTypeCode(spec(r).dtype)),
                  ArgValue(), ArgValue::ofDevice(seg_.device), ArgValue()};
        z.outputs = {r};
        seg_.values[r].strides = contiguous(spec(r).sizes);
        nodes.push_back(z);
        continue;
      }
      if (i == m.bmm2) {
        nodes.insert(nodes.end(), before.begin(), before.end());
        nodes.push_back(view);
        continue;
      }
      nodes.push_back(std::move(seg_.nodes[i]));
      if (pure.count(i))
        candidates_.insert(&nodes.back() - nodes.data());
    }
    seg_.nodes = std::move(nodes);
    dropDead();
  }

  /// Removes the pattern's nodes that nothing reads any more.
  void dropDead() {
    std::vector<int> uses(seg_.values.size(), 0);
    for (const SegmentNode &n : seg_.nodes)
      for (int t : n.tensorArgs())
        uses[t]++;
    for (int o : seg_.outputs)
      uses[o]++;
    std::vector<bool> dead(seg_.nodes.size(), false);
    for (int i = (int)seg_.nodes.size() - 1; i >= 0; --i) {
      const SegmentNode &n = seg_.nodes[i];
      if (!candidates_.count(i) || n.mutates)
        continue;
      bool unread = true;
      for (int o : n.outputs)
        unread = unread && (o < 0 || uses[o] == 0);
      if (!unread)
        continue;
      dead[i] = true;
      for (int t : n.tensorArgs())
        uses[t]--;
    }
    std::vector<SegmentNode> kept;
    for (size_t i = 0; i < seg_.nodes.size(); ++i)
      if (!dead[i])
        kept.push_back(std::move(seg_.nodes[i]));
    seg_.nodes = std::move(kept);
    candidates_.clear();
  }

  Segment &seg_;
  std::vector<int> producer_;
  std::vector<std::vector<int>> readers_;
  std::unordered_set<int> isOutput_;
  std::unordered_set<size_t> candidates_; ///< indices into the rewritten node list
};

} // namespace

int fuseAttention(Segment &seg) { return AttentionFuser(seg).run(); }

} // namespace tgc
