// Generated tensor programs for the fuzz test: a seeded generator of random
// op sequences (pointwise, reductions, views, indexing, matmul, cat, in-place
// ops through views) over random shapes, dtypes and layouts, an eager
// interpreter for them, a printer that writes one as C++, and a shrinker
// that removes steps while a failure persists.
#ifndef TGC_TESTS_FUZZ_PROGRAM_H
#define TGC_TESTS_FUZZ_PROGRAM_H

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace tgc::fuzz {

/// How an input tensor is laid out in memory.
enum class Layout { Contiguous, Transposed, Strided, Expanded, ChannelsLast };

/// An input: its values live in `base`; `make()` returns a fresh copy laid
/// out as `layout` says (a view of a fresh buffer for the non-contiguous
/// ones), so a program that writes its inputs starts from the same values.
struct Input {
  at::Tensor base;
  Layout layout = Layout::Contiguous;
  int64_t dim = 0; ///< the dimension transposed with the last, expanded, ...
  int64_t expandTo = 0; ///< Expanded: the size dimension `dim` is expanded to
  at::Tensor make() const;
};

/// The kinds of steps. Each produces one new value; an InPlace step writes
/// its first argument (through a chain of views) and its value is that
/// argument after the write.
enum class Kind {
  Unary, Binary, Where, Scalar, Cast, Reduce, Row, View, Index, Matmul, Cat, InPlace
};

struct Step {
  Kind kind = Kind::Unary;
  int op = 0;                ///< which op of the kind (see Program.cpp's tables)
  std::vector<int> args;     ///< value ids: inputs first, then one per step
  std::vector<int64_t> ints; ///< dims, sizes, indices
  double scalar = 0;
  double scalar2 = 0;
  bool flag = false;         ///< keepdim, accumulate, ...
  at::ScalarType dtype = at::kFloat;
  std::vector<int> constants; ///< indices into Program::constants
  /// InPlace: the views from the written argument to the region written,
  /// each a View step's (op, ints) pair.
  std::vector<std::pair<int, std::vector<int64_t>>> views;
};

/// A program: `inputs.size()` inputs, then one value per step; returns the
/// values in `outputs`.
struct Program {
  uint64_t seed = 0;
  std::vector<Input> inputs;
  std::vector<at::Tensor> constants; ///< index tensors, masks, weights
  std::vector<Step> steps;
  std::vector<int> outputs;
};

/// The program of `seed`: the same seed gives the same program. Every step
/// was run eagerly while generating, so the program is valid eager code.
Program generate(uint64_t seed);

/// Runs `p` eagerly on `inputs` (tracers, when compiled), returning its
/// outputs. Throws what ATen throws.
std::vector<at::Tensor> run(const Program &p, const std::vector<at::Tensor> &inputs);

/// fresh copies of the program's inputs, laid out as generated.
std::vector<at::Tensor> makeInputs(const Program &p);

/// `p` run in float64 (floating inputs, constants and casts widened, the
/// default dtype double): the outputs and the inputs after the run.
struct Reference {
  std::vector<at::Tensor> outputs, inputs;
};
Reference reference(const Program &p);

/// Whether `p` runs eagerly without an error.
bool valid(const Program &p);

/// The program as C++ a reader can paste into a test.
std::string describe(const Program &p);

/// Removes steps and outputs while `fails` holds and the program stays
/// valid, until no single removal keeps it failing.
Program shrink(const Program &p, const std::function<bool(const Program &)> &fails);

/// A small std::format: "{}" takes the next argument, "{N}" argument N,
/// "{{" and "}}" are braces. (LibTorch bundles its own fmt headers, which
/// shadow Debian's in a translation unit that includes LibTorch.)
template <class... A> std::string format(const char *pattern, const A &...args) {
  std::vector<std::string> values;
  (values.push_back((std::ostringstream() << args).str()), ...);
  std::string out;
  size_t next = 0;
  for (const char *c = pattern; *c; ++c) {
    if ((c[0] == '{' && c[1] == '{') || (c[0] == '}' && c[1] == '}')) {
      out += *c++;
    } else if (*c == '{') {
      size_t index = next++;
      if (c[1] != '}')
        index = std::strtoul(c + 1, nullptr, 10);
      while (*c != '}')
        ++c;
      out += values.at(index);
    } else {
      out += *c;
    }
  }
  return out;
}

/// Tolerances for comparing a compiled result of dtype `dt` with eager.
struct Tolerance {
  double rtol = 0, atol = 0;
};
Tolerance toleranceFor(at::ScalarType dt);

/// "" when `got` matches `want` (dtype, sizes, values within the dtype's
/// tolerance, NaN where eager has NaN), else what differs. With `exact` (the
/// float64 reference), a float value also passes when its error from it is
/// within three times eager's.
std::string compare(const at::Tensor &got, const at::Tensor &want,
                    const at::Tensor &exact = at::Tensor());

} // namespace tgc::fuzz

#endif // TGC_TESTS_FUZZ_PROGRAM_H
