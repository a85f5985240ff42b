// A downstream user of an installed tgc: compile a function, compare with eager.
#include <tgc/tgc.h>
#include <torch/torch.h>

#include <iostream>

int main() {
  auto fn = [](torch::Tensor a, torch::Tensor b) { return (a * b + 1).relu(); };
  auto compiled = tgc::compile(fn);
  torch::Tensor a = torch::randn({32, 16}), b = torch::randn({16});
  torch::Tensor got = compiled(a, b), want = fn(a, b);
  double err = (got - want).abs().max().item<double>();
  tgc::Stats s = tgc::stats();
  std::cout << "max error " << err << ", kernels " << s.kernel_launches << "\n";
  return err < 1e-6 && s.kernel_launches == 1 && s.eager_fallbacks == 0 ? 0 : 1;
}
