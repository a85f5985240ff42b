//===- PlanSerialization.cpp - Plans to bytes and back, checked -----------===//
#include "runtime/Plan.h"

#include "runtime/ByteStream.h"

#include <cstring>
#include <stdexcept>

namespace tgc {

namespace {

constexpr uint32_t kPlanFormat = 3; // 2: kernels carry their index checks; 3: CUDA grid

void writeArg(Writer &w, const ArgValue &a) {
  w.u8(a.kind);
  w.u8(a.b);
  w.u8(a.isFloat);
  w.i64(a.i);
  w.f64(a.d);
  w.u8(uint8_t(a.dtype));
  w.str(a.s);
  w.ints(a.ints);
  w.i64(a.doubles.size());
  for (double d : a.doubles)
    w.f64(d);
  w.ids(a.tensors);
}

ArgValue readArg(Reader &r) {
  ArgValue a;
  uint8_t kind = r.u8();
  if (kind > ArgValue::BoolList)
    throw std::runtime_error("bad argument kind");
  a.kind = ArgValue::Kind(kind);
  a.b = r.u8();
  a.isFloat = r.u8();
  a.i = r.i64();
  a.d = r.f64();
  uint8_t dt = r.u8();
  if (dt > uint8_t(DType::Float64))
    throw std::runtime_error("bad dtype");
  a.dtype = DType(dt);
  a.s = r.str();
  a.ints = r.ints();
  a.doubles.resize(r.count(8));
  for (double &d : a.doubles)
    d = r.f64();
  a.tensors = r.ids();
  return a;
}

void checkIds(const std::vector<int> &ids, size_t n, bool allowNone = false) {
  for (int id : ids)
    if (id >= int(n) || id < (allowNone ? -1 : 0))
      throw std::runtime_error("value id " + std::to_string(id) + " out of range");
}

} // namespace

std::string serializePlan(const Plan &p) {
  Writer w;
  w.i64(kPlanFormat);
  w.str(p.device);
  w.i64(p.values.size());
  for (const TensorSpec &v : p.values) {
    w.ints(v.sizes);
    w.ints(v.strides);
    w.u8(uint8_t(v.dtype));
  }
  w.ids(p.inputs);
  w.ids(p.outputs);
  w.i64(p.steps.size());
  for (const Step &s : p.steps) {
    w.u8(s.kind);
    w.i64(s.index);
  }
  w.i64(p.kernels.size());
  for (const KernelStep &k : p.kernels) {
    w.str(k.name);
    w.ids(k.inputs);
    w.ids(k.outputs);
    w.i64(k.numel);
    w.i64(k.block);
    w.i64(k.vector);
    w.i64(k.grid);
    w.i64(k.checks.size());
    for (const IndexCheck &c : k.checks) {
      w.i64(c.dim);
      w.i64(c.size);
      w.u8(c.wrap);
      w.str(c.origin);
    }
  }
  w.i64(p.externs.size());
  for (const ExternStep &e : p.externs) {
    w.str(e.op);
    w.str(e.overload);
    w.i64(e.args.size());
    for (const ArgValue &a : e.args)
      writeArg(w, a);
    w.ids(e.outputs);
  }
  w.str(p.cpuSource);
  w.i64(p.cudaSources.size());
  for (const std::string &s : p.cudaSources)
    w.str(s);
  return w.out;
}

bool deserializePlan(const std::string &data, Plan &p, std::string &error) {
  try {
    Reader r(data);
    if (r.i64() != kPlanFormat)
      throw std::runtime_error("unknown plan format");
    p = Plan();
    p.device = r.str();
    p.values.resize(r.count(17));
    for (TensorSpec &v : p.values) {
      v.sizes = r.ints();
      v.strides = r.ints();
      uint8_t dt = r.u8();
      if (dt > uint8_t(DType::Float64) || v.sizes.size() != v.strides.size())
        throw std::runtime_error("bad tensor spec");
      v.dtype = DType(dt);
    }
    const size_t nv = p.values.size();
    p.inputs = r.ids();
    p.outputs = r.ids();
    checkIds(p.inputs, nv);
    checkIds(p.outputs, nv);
    p.steps.resize(r.count(9));
    for (Step &s : p.steps) {
      uint8_t k = r.u8();
      if (k > Step::Extern)
        throw std::runtime_error("bad step kind");
      s.kind = Step::Kind(k);
      s.index = int(r.i64());
    }
    p.kernels.resize(r.count(8));
    for (KernelStep &k : p.kernels) {
      k.name = r.str();
      k.inputs = r.ids();
      k.outputs = r.ids();
      checkIds(k.inputs, nv);
      checkIds(k.outputs, nv);
      k.numel = r.i64();
      k.block = r.i64();
      k.vector = r.i64();
      k.grid = r.i64();
      k.checks.resize(r.count(25));
      for (IndexCheck &c : k.checks) {
        c.id = &c - k.checks.data(); // ids are positions: not stored
        c.dim = r.i64();
        c.size = r.i64();
        c.wrap = r.u8() != 0;
        c.origin = r.str();
      }
    }
    p.externs.resize(r.count(8));
    for (ExternStep &e : p.externs) {
      e.op = r.str();
      e.overload = r.str();
      e.args.resize(r.count(8));
      for (ArgValue &a : e.args) {
        a = readArg(r);
        checkIds(a.tensors, nv, /*allowNone=*/true);
      }
      e.outputs = r.ids();
      checkIds(e.outputs, nv, /*allowNone=*/true);
    }
    for (const Step &s : p.steps) {
      size_t n = s.kind == Step::Kernel ? p.kernels.size() : p.externs.size();
      if (s.index < 0 || size_t(s.index) >= n)
        throw std::runtime_error("step refers to a missing kernel or call");
    }
    p.cpuSource = r.str();
    p.cudaSources.resize(r.count(8));
    for (std::string &s : p.cudaSources)
      s = r.str();
    if (!r.done())
      throw std::runtime_error("trailing bytes");
    return true;
  } catch (const std::exception &e) {
    error = std::string("malformed plan: ") + e.what();
    return false;
  }
}

} // namespace tgc
