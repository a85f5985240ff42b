//===- InputSpec.cpp - NAME:DTYPE[SHAPE] input specs and random inputs ----===//
#include "tgc/Package.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>

#include <algorithm>
#include <cctype>
#include <utility>

namespace tgc {

namespace {

const std::pair<const char *, c10::ScalarType> kDtypes[] = {
    {"f16", c10::kHalf},  {"bf16", c10::kBFloat16}, {"f32", c10::kFloat},
    {"f64", c10::kDouble}, {"i8", c10::kChar},      {"i16", c10::kShort},
    {"i32", c10::kInt},   {"i64", c10::kLong},      {"u8", c10::kByte},
    {"bool", c10::kBool}};

const char *dtypeToken(c10::ScalarType t) {
  for (const auto &[name, type] : kDtypes)
    if (type == t)
      return name;
  return "?";
}

[[noreturn]] void bad(const std::string &text, const std::string &why) {
  throw std::invalid_argument("malformed input spec '" + text + "': " + why +
                              " (expected NAME:DTYPE[D0,D1,...], e.g. x:f32[1,3,224,224] "
                              "or ids:i64[2,32]@0:50257)");
}

/// Parses a comma-separated list of integers; `what` names it in errors.
std::vector<int64_t> parseInts(const std::string &text, const std::string &body,
                               const char *what) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find(',', pos);
    std::string item = body.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (item.empty() || used != item.size())
      bad(text, std::string(what) + " '" + item + "' is not an integer");
    out.push_back(v);
    if (end == std::string::npos)
      break;
    pos = end + 1;
    if (pos == body.size())
      bad(text, std::string("a ") + what + " is missing after the last comma");
  }
  return out;
}

} // namespace

std::string InputSpec::str() const {
  std::string s = name + ":" + dtypeToken(dtype) + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  s += "]";
  if (c10::isIntegralType(dtype, /*includeBool=*/false))
    s += "@" + std::to_string(low) + ":" + std::to_string(high);
  return s;
}

InputSpec parseInputSpec(const std::string &text) {
  InputSpec spec;
  size_t colon = text.find(':');
  if (colon == std::string::npos)
    bad(text, "no ':' between the name and the dtype");
  spec.name = text.substr(0, colon);
  if (spec.name.empty())
    bad(text, "the name is empty");
  for (char c : spec.name)
    if (!std::isalnum((unsigned char)c) && c != '_')
      bad(text, "the name may hold letters, digits and '_' only");
  size_t open = text.find('[', colon);
  size_t close = text.find(']', colon);
  if (open == std::string::npos || close == std::string::npos || close < open)
    bad(text, "the shape is missing; write it in brackets, [] for a scalar");
  std::string dtype = text.substr(colon + 1, open - colon - 1);
  bool known = false;
  for (const auto &[token, type] : kDtypes)
    if (dtype == token) {
      spec.dtype = type;
      known = true;
    }
  if (!known)
    bad(text, "unknown dtype '" + dtype + "' (f16 bf16 f32 f64 i8 i16 i32 i64 u8 bool)");
  spec.shape = parseInts(text, text.substr(open + 1, close - open - 1), "dimension");
  for (int64_t d : spec.shape)
    if (d < 0)
      bad(text, "dimension " + std::to_string(d) + " is negative");
  std::string rest = text.substr(close + 1);
  if (rest.empty())
    return spec;
  if (rest.front() != '@')
    bad(text, "unexpected '" + rest + "' after the shape");
  if (!c10::isIntegralType(spec.dtype, /*includeBool=*/false))
    bad(text, "a @LOW:HIGH range is for integer dtypes only");
  std::string bounds = rest.substr(1);
  std::replace(bounds.begin(), bounds.end(), ':', ',');
  std::vector<int64_t> range = parseInts(text, bounds, "bound");
  if (range.size() != 2 || range[0] >= range[1])
    bad(text, "the range must be @LOW:HIGH with LOW < HIGH");
  spec.low = range[0];
  spec.high = range[1];
  return spec;
}

std::vector<at::Tensor> randomInputs(const std::vector<InputSpec> &specs, uint64_t seed,
                                     int variant) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<at::Tensor> out;
  for (const InputSpec &s : specs) {
    auto options = at::TensorOptions().dtype(s.dtype);
    at::Tensor t;
    if (s.dtype == c10::kBool)
      t = at::randint(0, 2, s.shape, gen, options.dtype(c10::kLong)).to(c10::kBool);
    else if (c10::isIntegralType(s.dtype, false))
      t = at::randint(s.low, s.high, s.shape, gen, options);
    else if (variant == 1)
      t = at::rand(s.shape, gen, options);
    else if (variant == 2)
      t = at::rand(s.shape, gen, options).neg_();
    else
      t = at::randn(s.shape, gen, options);
    out.push_back(std::move(t));
  }
  return out;
}

} // namespace tgc
