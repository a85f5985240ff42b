// Convolutions (the real-model issue, point 2): which call a frozen
// convolution should make, and in which layout, at the zoo's shapes (batch
// 1, f32). Per shape, in alternating rounds in one process (microseconds per
// call, medians), each a convolution with its ReLU:
//   aten       at::convolution + relu_, channels-last input (what the
//              rest of a frozen conv net hands it);
//   aten nchw  the same on an NCHW input (the layout eager models run in);
//   onednn     mkldnn::_convolution_pointwise, prepacked weight, ReLU fused;
//   eager      the module (conv, batch norm, ReLU) on the NCHW input;
//   tgc        that module through tgc::compile (frozen: the call freezing
//              picks, compiler/freeze/Freeze.cpp smallPointwise) on the
//              channels-last input.
// "dnn/aten": oneDNN's time over ATen's (>1: ATen's call is faster), which
// is what the 1x1 threshold of freezing is read from.
//
//   tgc-bench-conv [--rounds N] [--threads N]
#include "Timing.h"

#include <tgc/tgc.h>
#include <torch/torch.h>

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

using tgc::bench::median;
using tgc::bench::usPerCall;

at::Tensor call(const char *op, const char *overload, std::vector<c10::IValue> args) {
  auto handle = c10::Dispatcher::singleton().findSchemaOrThrow(op, overload);
  handle.callBoxed(&args);
  return args.at(0).toTensor();
}

struct Shape {
  const char *where;
  int64_t cin, cout, hw, k, stride, groups;
};

} // namespace

int main(int argc, char **argv) {
  int rounds = 9, threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds"))
      rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
  }
  torch::set_num_threads(threads);
  torch::NoGradGuard noGrad;
  const std::vector<Shape> shapes = {
      // 1x1 convolutions of the zoo's small CNNs (mnasnet, mobilenet_v3 at
      // 64x64 inputs; efficientnet, regnet at 224x224), smallest first.
      {"mnas 1x1", 72, 24, 8, 1, 1, 1},
      {"mnas 1x1", 240, 40, 4, 1, 1, 1},
      {"mnas 1x1", 96, 576, 2, 1, 1, 1},
      {"mnas 1x1", 16, 48, 16, 1, 1, 1},
      {"mobv3 1x1", 96, 384, 4, 1, 1, 1},
      {"mnas 1x1", 160, 1280, 2, 1, 1, 1},
      {"1x1", 48, 288, 8, 1, 1, 1},
      {"1x1", 72, 288, 8, 1, 1, 1},
      {"1x1", 40, 240, 14, 1, 1, 1},
      {"1x1", 24, 144, 28, 1, 1, 1},
      {"effnet 1x1", 96, 576, 7, 1, 1, 1},
      {"effnet 1x1", 112, 672, 7, 1, 1, 1},
      {"effnet 1x1", 320, 1280, 7, 1, 1, 1},
      {"resnet 1x1", 64, 256, 56, 1, 1, 1},
      // Depthwise and full 3x3 (oneDNN's in every case measured).
      {"dw 3x3", 72, 72, 8, 3, 1, 72},
      {"dw 3x3", 576, 576, 2, 3, 1, 576},
      {"3x3", 128, 128, 8, 3, 1, 1},
      {"resnet 3x3", 64, 64, 56, 3, 1, 1},
      {"stem 3x3 s2", 3, 16, 64, 3, 2, 1},
  };
  std::printf("threads %d, %d rounds, f32, batch 1; us per call (median), conv + ReLU\n", threads,
              rounds);
  std::printf("%-12s %-22s %8s %8s %9s %8s %9s %8s %8s  %s\n", "layer", "cin>cout @hw kxk s g",
              "MMACs", "aten", "aten nchw", "onednn", "dnn/aten", "eager", "tgc", "tgc calls");
  for (const Shape &s : shapes) {
    torch::manual_seed(3);
    const int64_t pad = s.k / 2;
    torch::nn::Sequential net(torch::nn::Conv2d(torch::nn::Conv2dOptions(s.cin, s.cout, s.k)
                                                    .stride(s.stride)
                                                    .padding(pad)
                                                    .groups(s.groups)
                                                    .bias(false)),
                              torch::nn::BatchNorm2d(s.cout), torch::nn::ReLU());
    net->eval();
    auto bn = net[1]->as<torch::nn::BatchNorm2d>();
    bn->running_mean.uniform_(-0.5, 0.5);
    bn->running_var.uniform_(0.5, 2.0);
    torch::Tensor x = torch::randn({1, s.cin, s.hw, s.hw});
    torch::Tensor xl = x.contiguous(at::MemoryFormat::ChannelsLast);
    torch::Tensor w = torch::randn({s.cout, s.cin / s.groups, s.k, s.k});
    torch::Tensor b = torch::randn({s.cout});
    const std::vector<int64_t> stride{s.stride, s.stride}, padding{pad, pad}, dilation{1, 1};
    at::Tensor packed = call("mkldnn::_reorder_convolution_weight", "",
                             {w, padding, stride, dilation, s.groups, xl.sizes().vec()});
    auto runDnn = [&] {
      return call("mkldnn::_convolution_pointwise", "",
                  {xl, packed, b, padding, stride, dilation, s.groups, std::string("relu"),
                   c10::List<std::optional<at::Scalar>>(), std::optional<std::string>()});
    };
    auto aten = [&](const torch::Tensor &in) {
      return at::convolution(in, w, b, stride, padding, dilation, false, {0, 0}, s.groups).relu_();
    };
    tgc::reset();
    auto compiled = tgc::compile(net);
    compiled->forward(xl);
    const tgc::Stats st = tgc::stats();
    const double macs =
        double(s.cout) * s.cin / s.groups * s.k * s.k * (s.hw / s.stride) * (s.hw / s.stride);
    const int calls = std::max(20, int(3e8 / (macs + 3e5)));
    std::vector<double> ta, tn, td, te, tt;
    for (int r = 0; r < rounds; ++r) {
      ta.push_back(usPerCall([&] { aten(xl); }, calls));
      tn.push_back(usPerCall([&] { aten(x); }, calls));
      td.push_back(usPerCall(runDnn, calls));
      te.push_back(usPerCall([&] { net->forward(x); }, calls));
      tt.push_back(usPerCall([&] { compiled->forward(xl); }, calls));
    }
    const double a = median(ta), n = median(tn), d = median(td), e = median(te), t = median(tt);
    char dims[48];
    std::snprintf(dims, sizeof dims, "%lld>%lld @%lld %lldx%lld s%lld g%lld", (long long)s.cin,
                  (long long)s.cout, (long long)s.hw, (long long)s.k, (long long)s.k,
                  (long long)s.stride, (long long)s.groups);
    std::printf("%-12s %-22s %8.3f %8.1f %9.1f %8.1f %8.2fx %8.1f %8.1f  %s\n", s.where, dims,
                macs / 1e6, a, n, d, d / a, e, t,
                st.aten_convolutions     ? "aten"
                : st.onednn_convolutions ? "onednn"
                                         : "?");
  }
  return 0;
}
