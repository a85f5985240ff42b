//===- ScriptModule.cpp - compiling TorchScript modules -------------------===//
#include "tgc/tgc.h"

#include "runtime/Log.h"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <cstring>
#include <mutex>

namespace tgc {

struct CompiledScriptModule::Impl {
  torch::jit::Module module;
  detail::Engine engine;
  /// How the last traced call's output was structured: 0 tensor, 1 tuple,
  /// 2 list. Replays rebuild the same structure.
  mutable std::mutex mutex;
  mutable int structure = 0;
  Impl(const torch::jit::Module &m, Options o) : module(m), engine(std::move(o)) {}
};

CompiledScriptModule::CompiledScriptModule(const torch::jit::Module &module,
                                           Options options)
    : impl_(std::make_shared<Impl>(module, std::move(options))) {}
CompiledScriptModule::~CompiledScriptModule() = default;
CompiledScriptModule::CompiledScriptModule(CompiledScriptModule &&) noexcept = default;

static std::vector<at::Tensor> flattenOutput(const c10::IValue &out, int &structure) {
  if (out.isTensor()) {
    structure = 0;
    return {out.toTensor()};
  }
  std::vector<at::Tensor> flat;
  if (out.isTuple()) {
    structure = 1;
    for (const c10::IValue &e : out.toTupleRef().elements()) {
      TORCH_CHECK(e.isTensor(), "tgc: TorchScript outputs must be tensors, a tuple or a list of them");
      flat.push_back(e.toTensor());
    }
    return flat;
  }
  TORCH_CHECK(out.isTensorList(),
              "tgc: TorchScript outputs must be tensors, a tuple or a list of them, got ",
              out.tagKind());
  structure = 2;
  return out.toTensorVector();
}

/// Folds the module's state into `h`: the identity of every tensor
/// attribute (parameters, buffers) and the value of every bool, int and
/// float attribute (`training` among them), submodules included. A replaced
/// parameter (`setattr`, `register_parameter` again), `train()` / `eval()`
/// or a changed attribute the scripted code branches on changes the key, so
/// the next call is a guard miss instead of a replay of graphs captured
/// with the old tensors or mode. Walks the slots: no allocation.
static void mixModuleState(const c10::ivalue::Object &object, uint64_t &h, int depth = 0) {
  auto mix = [&h](uint64_t v) { h = detail::mixKey(h, v); };
  mix(object.slots().size());
  for (const c10::IValue &v : object.slots()) {
    if (v.isTensor()) {
      mix(reinterpret_cast<uintptr_t>(v.unsafeToTensorImpl()));
    } else if (v.isBool()) {
      mix(v.toBool() ? 3 : 5);
    } else if (v.isInt()) {
      mix(static_cast<uint64_t>(v.toInt()));
    } else if (v.isDouble()) {
      double d = v.toDouble();
      uint64_t bits;
      std::memcpy(&bits, &d, sizeof bits);
      mix(bits);
    } else if (v.isObject() && depth < 64) {
      const c10::ivalue::Object &child = v.toObjectRef();
      mix(reinterpret_cast<uintptr_t>(&child));
      if (child.type()->is_module())
        mixModuleState(child, h, depth + 1);
    } else {
      mix(static_cast<uint64_t>(v.isNone() ? 7 : 11));
    }
  }
}

c10::IValue CompiledScriptModule::forward(std::vector<c10::IValue> inputs) const {
  std::vector<at::Tensor> tensors;
  std::vector<size_t> positions;
  uint64_t state = 0xcbf29ce484222325ull;
  mixModuleState(*impl_->module._ivalue(), state);
  std::string key = "m" + std::to_string(state) + ";";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const c10::IValue &v = inputs[i];
    if (v.isTensor()) {
      tensors.push_back(v.toTensor());
      positions.push_back(i);
    } else if (v.isInt() || v.isDouble() || v.isBool() || v.isString() || v.isNone()) {
      key += v.tagKind() + ":" + (v.isString() ? v.toStringRef() : v.isNone() ? "" : c10::str(v)) + ";";
    } else {
      TORCH_CHECK(false, "tgc: TorchScript input ", i, " is a ", v.tagKind(),
                  "; compiled modules take tensors and int/float/bool/str values");
    }
  }
  Impl &impl = *impl_;
  auto body = [&](const std::vector<at::Tensor> &replaced) {
    std::vector<c10::IValue> args = inputs;
    for (size_t k = 0; k < positions.size(); ++k)
      args[positions[k]] = replaced[k];
    // The JIT's own fusers would bypass the dispatcher; tgc fuses instead.
    torch::jit::GraphOptimizerEnabledGuard noJitFusion(false);
    c10::IValue out = impl.module.forward(args);
    std::lock_guard<std::mutex> lock(impl.mutex);
    return flattenOutput(out, impl.structure);
  };
  std::vector<at::Tensor> outs = impl.engine.call(tensors, key, body);
  std::lock_guard<std::mutex> lock(impl.mutex);
  if (impl.structure == 0)
    return outs.at(0);
  if (impl.structure == 1) {
    std::vector<c10::IValue> elems(outs.begin(), outs.end());
    return c10::ivalue::Tuple::create(std::move(elems));
  }
  return c10::List<at::Tensor>(outs);
}

CompiledScriptModule compile(const torch::jit::Module &module, Options options) {
  return CompiledScriptModule(module, std::move(options));
}

} // namespace tgc
