// Random test inputs shared by the e2e matrices: never zeros, every dtype.
#ifndef TGC_TESTS_E2E_RANDOMTENSORS_H
#define TGC_TESTS_E2E_RANDOMTENSORS_H

#include <torch/torch.h>

#include <vector>

namespace tgc::test {

/// Floats ~ N(0, 4); bools half true; integers in [-20, 20).
inline torch::Tensor rnd(std::vector<int64_t> shape, torch::ScalarType dt) {
  if (at::isFloatingType(dt))
    return (torch::randn(shape) * 2).to(dt);
  if (dt == torch::kBool)
    return torch::randint(0, 2, shape).to(dt);
  return torch::randint(-20, 20, shape).to(dt);
}

} // namespace tgc::test

#endif // TGC_TESTS_E2E_RANDOMTENSORS_H
