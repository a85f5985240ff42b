// Segment text form: print -> parse gives the same Segment back, field by
// field, for every argument kind; malformed text is an error with a place.
#include "compiler/capture/SegmentText.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <regex>

namespace tgc {
namespace {

uint64_t bitsOf(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  return bits;
}

void expectSameArg(const ArgValue &a, const ArgValue &b, const std::string &where) {
  SCOPED_TRACE(where);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.b, b.b);
  EXPECT_EQ(a.isFloat, b.isFloat);
  EXPECT_EQ(a.i, b.i);
  EXPECT_EQ(bitsOf(a.d), bitsOf(b.d)) << a.d << " vs " << b.d;
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.s, b.s);
  EXPECT_EQ(a.ints, b.ints);
  ASSERT_EQ(a.doubles.size(), b.doubles.size());
  for (size_t i = 0; i < a.doubles.size(); ++i)
    EXPECT_EQ(bitsOf(a.doubles[i]), bitsOf(b.doubles[i])) << a.doubles[i];
  EXPECT_EQ(a.tensors, b.tensors);
}

/// Every field of `a` and `b` is equal (doubles bit for bit).
void expectSameSegment(const Segment &a, const Segment &b) {
  EXPECT_EQ(a.device, b.device);
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t i = 0; i < a.values.size(); ++i) {
    EXPECT_EQ(a.values[i].sizes, b.values[i].sizes) << "value " << i;
    EXPECT_EQ(a.values[i].strides, b.values[i].strides) << "value " << i;
    EXPECT_EQ(a.values[i].dtype, b.values[i].dtype) << "value " << i;
  }
  EXPECT_EQ(a.inputs, b.inputs);
  EXPECT_EQ(a.outputs, b.outputs);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t n = 0; n < a.nodes.size(); ++n) {
    const SegmentNode &x = a.nodes[n], &y = b.nodes[n];
    EXPECT_EQ(x.op, y.op);
    EXPECT_EQ(x.overload, y.overload);
    EXPECT_EQ(x.outputs, y.outputs);
    EXPECT_EQ(x.mutates, y.mutates);
    ASSERT_EQ(x.args.size(), y.args.size());
    for (size_t i = 0; i < x.args.size(); ++i)
      expectSameArg(x.args[i], y.args[i], x.op + " argument " + std::to_string(i));
  }
}

ArgValue arg(ArgValue::Kind kind) {
  ArgValue a;
  a.kind = kind;
  return a;
}

ArgValue tensor(int id) {
  ArgValue a = arg(ArgValue::Tensor);
  a.tensors = {id};
  return a;
}

ArgValue number(double d) {
  ArgValue a = arg(ArgValue::Double);
  a.d = d;
  return a;
}

/// A segment with every argument kind, edge-case numbers and strings,
/// strided and 0-d values, an undefined result, a mutating node and a
/// value nothing defines.
Segment everyKind() {
  Segment s;
  s.device = "cuda:0";
  s.values = {{{4, 8}, {1, 4}, DType::Float32}, {{}, {}, DType::Int64},
              {{4, 8}, {8, 1}, DType::BFloat16}, {{2, 0, 3}, {0, 3, 1}, DType::Bool},
              {{4, 8}, {8, 1}, DType::Float16}};
  s.inputs = {0, 1};
  ArgValue i = arg(ArgValue::Int), b = arg(ArgValue::Bool), str = arg(ArgValue::String);
  i.i = std::numeric_limits<int64_t>::min();
  b.b = true;
  str.s = "quote \" backslash \\ newline \n tab \t byte \xff";
  ArgValue dev = arg(ArgValue::Device), ints = arg(ArgValue::IntList);
  dev.s = "cuda:0";
  ints.ints = {-1, 0, std::numeric_limits<int64_t>::max()};
  ArgValue bools = arg(ArgValue::BoolList), doubles = arg(ArgValue::DoubleList);
  bools.ints = {1, 0, 1};
  doubles.doubles = {0.1, 1.0 / 3, -0.0, 5e-324, 1e300};
  ArgValue list = arg(ArgValue::TensorList), holes = arg(ArgValue::TensorList);
  list.tensors = {0, -1, 1};
  holes.tensors = {-1};
  ArgValue floatScalar = arg(ArgValue::ScalarTensor), intScalar = arg(ArgValue::ScalarTensor);
  floatScalar.isFloat = true;
  floatScalar.d = 2.5;
  floatScalar.dtype = DType::Float64;
  intScalar.i = -7;
  intScalar.dtype = DType::Int64;
  s.nodes = {
      {"aten::foo", "Tensor", {tensor(0), tensor(1), arg(ArgValue::None), i, b, str, dev}, {2}},
      {"aten::lists", "", {ints, bools, doubles, list, holes}, {-1, 4}},
      {"aten::empties", "", {arg(ArgValue::IntList), arg(ArgValue::BoolList),
                             arg(ArgValue::DoubleList), arg(ArgValue::TensorList)}, {}},
      {"prims::numbers", "out", {number(1.0), number(-0.0), number(1e-5), number(HUGE_VAL),
                                 number(-HUGE_VAL), number(std::nan("")), number(-std::nan("")),
                                 floatScalar, intScalar}, {}, /*mutates=*/true},
  };
  s.outputs = {2, 4, 0};
  return s;
}

TEST(SegmentText, EveryArgumentKindRoundTrips) {
  Segment s = everyKind();
  std::string text = printSegment(s);
  Segment parsed;
  std::string error;
  ASSERT_TRUE(parseSegment(text, parsed, error)) << error << "\n" << text;
  expectSameSegment(s, parsed);
  EXPECT_EQ(printSegment(parsed), text);
  EXPECT_EQ(parsed.structuralKey(), s.structuralKey());
}

TEST(SegmentText, PrintsTheDocumentedSyntax) {
  std::string text = printSegment(everyKind());
  EXPECT_NE(text.find("segment @cuda:0 (%0: f32[4,8]{1,4}, %1: i64[]{}) {\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("  %3: bool[2,0,3]{0,3,1}\n"), std::string::npos) << text;
  EXPECT_NE(text.find("none, %4: f16[4,8]{8,1} = aten::lists([-1, 0, 9223372036854775807], "
                      "[true, false, true], [0.1, 0.3333333333333333, -0.0, 5e-324, 1e+300], "
                      "[%0, none, %1], [none])"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("aten::empties([], bools[], doubles[], tensors[])\n"), std::string::npos);
  EXPECT_NE(text.find("prims::numbers.out(1.0, -0.0, 1e-05, inf, -inf, nan, -nan, "
                      "scalar(2.5: f64), scalar(-7: i64)) mutates\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\"quote \\\" backslash \\\\ newline \\x0a tab \\x09 byte \\xff\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  return %2, %4, %0\n}\n"), std::string::npos) << text;
}

TEST(SegmentText, ParsesHandWrittenText) {
  Segment s;
  std::string error;
  ASSERT_TRUE(parseSegment(R"(// comments and free layout are fine
      segment @"my device" (%1: f32[8]{1},
                            %0: f32[4,8]{8,1}) {
        %2: f32[4,8]{8,1} = aten::add.Tensor(%0, %1, 2)  // alpha 2
        return %2, %1 })",
                           s, error))
      << error;
  EXPECT_EQ(s.device, "my device");
  EXPECT_EQ(s.inputs, (std::vector<int>{1, 0}));
  ASSERT_EQ(s.values.size(), 3u);
  EXPECT_EQ(s.values[0].sizes, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(s.values[1].strides, (std::vector<int64_t>{1}));
  ASSERT_EQ(s.nodes.size(), 1u);
  EXPECT_EQ(s.nodes[0].op, "aten::add");
  EXPECT_EQ(s.nodes[0].overload, "Tensor");
  ASSERT_EQ(s.nodes[0].args.size(), 3u);
  EXPECT_EQ(s.nodes[0].args[1].tensors, (std::vector<int>{1}));
  EXPECT_EQ(s.nodes[0].args[2].kind, ArgValue::Int);
  EXPECT_EQ(s.nodes[0].args[2].i, 2);
  EXPECT_FALSE(s.nodes[0].mutates);
  EXPECT_EQ(s.outputs, (std::vector<int>{2, 1}));
}

TEST(SegmentText, MalformedTextIsAnErrorWithItsPlace) {
  const std::regex place(R"(^\d+:\d+: .+)");
  std::pair<const char *, const char *> cases[] = {
      {"", "1:1: expected 'segment', found the end"},
      {"segment @cpu (%0: f32[4]{1}) { return %0 } x",
       "1:44: expected the end of the input after the segment, found 'x'"},
      {"segment @cpu (%0: f32[-4]{1}) { return %0 }", "1:23: a negative size"},
      {"segment @cpu (%99999999999999999999: f32[4]{1}) { return %0 }",
       "1:16: a value id out of the range of a 64-bit integer"},
      {"segment @cpu (%0: f32[4]{1}) { %1: f32[4]{1} = aten::mul(%0, 1e999) return %1 }",
       "1:62: number '1e999' is out of the range of a double"},
      {"segment @cpu (%0: f32[4]{1}) { %1: f32[4]{1} = aten::f(scalar(1: q8)) return %1 }",
       "1:66: expected a dtype (bool, u8, i8, i16, i32, i64, f16, bf16, f32 or f64), found 'q'"},
      {"segment @cpu (%0: f32[4]{1}) { %1: f32[4]{1} = aten::f([%0, 2]) return %1 }",
       "1:61: a tensor list cannot hold this element"},
      {"segment @cpu (%0: f32[4]{1}) { %1: f32[4]{1}, %2: f32[4]{1} aten::f(%0) return %1 }",
       "1:61: expected '=' between a node's results and its op, found 'a'"},
      {"segment @cpu (%0: f32[4]{1}) { %1: f32[4]{1} return %1 }",
       "1:53: value %1 is declared but nothing computes it (is an '=' missing?)"},
      {"segment @cpu (%0: f32[4]{1}) { %1: f32[4]{1} = aten::f(\"\\q\") return %1 }",
       "1:57: expected an escape \\\", \\\\ or \\xHH in a string"},
  };
  for (auto [text, expected] : cases) {
    Segment s;
    std::string error;
    EXPECT_FALSE(parseSegment(text, s, error)) << text;
    EXPECT_EQ(error, expected) << text;
  }
  // Every proper prefix of a valid text fails cleanly, with a place.
  std::string text = printSegment(everyKind());
  size_t end = text.rfind('}');
  for (size_t n = 0; n < end; ++n) {
    Segment s;
    std::string error;
    EXPECT_FALSE(parseSegment(text.substr(0, n), s, error)) << text.substr(0, n);
    EXPECT_TRUE(std::regex_match(error, place)) << error;
  }
}

} // namespace
} // namespace tgc
