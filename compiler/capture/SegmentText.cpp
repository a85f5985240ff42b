//===- SegmentText.cpp - printing and parsing of a Segment's text form ----===//
#include "compiler/capture/SegmentText.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace tgc {

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

namespace {

/// Characters a device or op name may hold without quotes.
bool isNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':' || c == '.' ||
         c == '-';
}

void printString(std::ostream &os, const std::string &s) {
  static const char hex[] = "0123456789abcdef";
  os << '"';
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\')
      os << '\\' << ch;
    else if (c < 0x20 || c >= 0x7f)
      os << "\\x" << hex[c >> 4] << hex[c & 15];
    else
      os << ch;
  }
  os << '"';
}

/// The shortest decimal that reads back as `d`, marked as a double by a
/// `.`, an exponent or a name, so it never reads back as an integer.
std::string doubleText(double d) {
  if (std::isnan(d))
    return std::signbit(d) ? "-nan" : "nan";
  if (std::isinf(d))
    return d < 0 ? "-inf" : "inf";
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d)
      break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return s;
}

void printType(std::ostream &os, const TensorSpec &spec) {
  os << dtypeName(spec.dtype) << '[';
  for (size_t i = 0; i < spec.sizes.size(); ++i)
    os << (i ? "," : "") << spec.sizes[i];
  os << "]{";
  for (size_t i = 0; i < spec.strides.size(); ++i)
    os << (i ? "," : "") << spec.strides[i];
  os << '}';
}

void printValue(std::ostream &os, const Segment &seg, int id) {
  if (id < 0) {
    os << "none";
    return;
  }
  os << '%' << id << ": ";
  if (id < (int)seg.values.size())
    printType(os, seg.values[id]);
  else
    os << "<no such value>"; // a malformed segment; parseSegment rejects it
}

template <class T, class F> void printList(std::ostream &os, const std::vector<T> &items, F each) {
  os << '[';
  for (size_t i = 0; i < items.size(); ++i) {
    os << (i ? ", " : "");
    each(items[i]);
  }
  os << ']';
}

void printArg(std::ostream &os, const ArgValue &a) {
  switch (a.kind) {
  case ArgValue::None: os << "none"; return;
  case ArgValue::Bool: os << (a.b ? "true" : "false"); return;
  case ArgValue::Int: os << a.i; return;
  case ArgValue::Double: os << doubleText(a.d); return;
  case ArgValue::String: printString(os, a.s); return;
  case ArgValue::Device: os << "device("; printString(os, a.s); os << ')'; return;
  case ArgValue::Tensor: os << '%' << (a.tensors.empty() ? -1 : a.tensors[0]); return;
  case ArgValue::ScalarTensor:
    os << "scalar(" << (a.isFloat ? doubleText(a.d) : std::to_string(a.i)) << ": "
       << dtypeName(a.dtype) << ')';
    return;
  case ArgValue::IntList:
    printList(os, a.ints, [&](int64_t v) { os << v; });
    return;
  case ArgValue::BoolList:
    os << (a.ints.empty() ? "bools" : "");
    printList(os, a.ints, [&](int64_t v) { os << (v ? "true" : "false"); });
    return;
  case ArgValue::DoubleList:
    os << (a.doubles.empty() ? "doubles" : "");
    printList(os, a.doubles, [&](double v) { os << doubleText(v); });
    return;
  case ArgValue::TensorList:
    os << (a.tensors.empty() ? "tensors" : "");
    printList(os, a.tensors, [&](int id) {
      if (id < 0)
        os << "none";
      else
        os << '%' << id;
    });
    return;
  }
  os << "<unknown argument kind " << int(a.kind) << '>';
}

void printNode(std::ostream &os, const Segment &seg, const SegmentNode &n) {
  os << "  ";
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    os << (i ? ", " : "");
    printValue(os, seg, n.outputs[i]);
  }
  os << (n.outputs.empty() ? "" : " = ") << n.op << (n.overload.empty() ? "" : ".")
     << n.overload << '(';
  for (size_t i = 0; i < n.args.size(); ++i) {
    os << (i ? ", " : "");
    printArg(os, n.args[i]);
  }
  os << ')' << (n.mutates ? " mutates" : "") << '\n';
}

} // namespace

std::string printSegment(const Segment &seg) {
  std::ostringstream os;
  os << "segment @";
  bool bare = !seg.device.empty();
  for (char c : seg.device)
    bare = bare && isNameChar(c);
  if (bare)
    os << seg.device;
  else
    printString(os, seg.device);
  os << " (";
  std::set<int> defined;
  for (size_t i = 0; i < seg.inputs.size(); ++i) {
    os << (i ? ", " : "");
    printValue(os, seg, seg.inputs[i]);
    defined.insert(seg.inputs[i]);
  }
  os << ") {\n";
  for (const SegmentNode &n : seg.nodes)
    defined.insert(n.outputs.begin(), n.outputs.end());
  // Values nothing defines still carry a layout: declare them.
  for (int id = 0; id < (int)seg.values.size(); ++id)
    if (!defined.count(id)) {
      os << "  ";
      printValue(os, seg, id);
      os << '\n';
    }
  for (const SegmentNode &n : seg.nodes)
    printNode(os, seg, n);
  os << "  return";
  for (size_t i = 0; i < seg.outputs.size(); ++i)
    os << (i ? ", %" : " %") << seg.outputs[i];
  os << "\n}\n";
  return os.str();
}

//===----------------------------------------------------------------------===//
// Parsing
//===----------------------------------------------------------------------===//

namespace {

class Parser {
public:
  Parser(std::string_view text, std::string &error) : text(text), error(error) {}

  bool parse(Segment &seg);

private:
  // Lexing: every function first skips blanks and `//` comments.
  void skipBlanks();
  bool atEnd() {
    skipBlanks();
    return pos >= text.size();
  }
  bool peek(char c) { return !atEnd() && text[pos] == c; }
  bool consume(char c);
  bool expect(char c, const char *context);
  /// [A-Za-z_][A-Za-z0-9_]*, or empty (nothing consumed).
  std::string_view identifier();
  bool consumeKeyword(std::string_view word);
  bool peekKeyword(std::string_view word) {
    size_t start = pos;
    bool found = consumeKeyword(word);
    pos = start;
    return found;
  }
  bool fail(const std::string &message);
  /// `open item, ..., item close` (possibly no item); `each` reads one.
  template <class F> bool parseSequence(char open, char close, const std::string &what, F each) {
    if (!expect(open, ("before " + what).c_str()))
      return false;
    if (consume(close))
      return true;
    do {
      if (!each())
        return false;
    } while (consume(','));
    return expect(close, ("after " + what).c_str());
  }
  bool failAt(size_t at, const std::string &message);

  bool parseInteger(int64_t &v, const char *what);
  bool parseId(int &id);
  bool parseDType(DType &dtype);
  bool parseDims(std::vector<int64_t> &dims, char open, char close, const char *what);
  bool parseType(TensorSpec &spec);
  bool parseString(std::string &s);
  bool parseNumber(ArgValue &a);
  bool parseElement(ArgValue &a);
  bool parseList(ArgValue &list, ArgValue::Kind kind);
  bool parseArg(ArgValue &a);
  bool parseOpName(SegmentNode &n);
  /// A node, or a `%id: type` line that declares a value nothing computes.
  bool parseStatement(Segment &seg);
  bool parseHeader(Segment &seg);

  /// Value `id` defined here (an input, a result or a declaration).
  bool define(int id, const TensorSpec &spec, size_t at);
  /// A reference to `id`, which must be defined already.
  bool use(int id, size_t at);

  std::string_view text;
  std::string &error;
  size_t pos = 0;
  std::map<int, TensorSpec> specs;
  std::set<int> computed; ///< inputs and results: what may be used
};

void Parser::skipBlanks() {
  while (pos < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[pos]))) {
      ++pos;
    } else if (text.compare(pos, 2, "//") == 0) {
      size_t eol = text.find('\n', pos);
      pos = eol == std::string_view::npos ? text.size() : eol;
    } else {
      return;
    }
  }
}

bool Parser::consume(char c) {
  if (!peek(c))
    return false;
  ++pos;
  return true;
}

bool Parser::expect(char c, const char *context) {
  if (consume(c))
    return true;
  return fail(std::string("expected '") + c + "' " + context);
}

std::string_view Parser::identifier() {
  skipBlanks();
  size_t start = pos;
  auto isStart = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; };
  if (pos < text.size() && isStart(text[pos]))
    while (pos < text.size() && (isStart(text[pos]) || std::isdigit((unsigned char)text[pos])))
      ++pos;
  return text.substr(start, pos - start);
}

bool Parser::consumeKeyword(std::string_view word) {
  size_t start = pos;
  if (identifier() == word)
    return true;
  pos = start;
  return false;
}

bool Parser::fail(const std::string &message) {
  skipBlanks();
  std::string found = pos < text.size() ? "'" + std::string(1, text[pos]) + "'" : "the end";
  return failAt(pos, message + ", found " + found);
}

bool Parser::failAt(size_t at, const std::string &message) {
  if (!error.empty())
    return false; // keep the first error
  int line = 1, column = 1;
  for (size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  error = std::to_string(line) + ":" + std::to_string(column) + ": " + message;
  return false;
}


bool Parser::parseInteger(int64_t &v, const char *what) {
  skipBlanks();
  size_t start = pos;
  if (pos < text.size() && text[pos] == '-')
    ++pos;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])))
    ++pos;
  auto [end, ec] = std::from_chars(text.data() + start, text.data() + pos, v);
  if (ec == std::errc::result_out_of_range)
    return failAt(start, std::string(what) + " out of the range of a 64-bit integer");
  if (ec != std::errc() || end != text.data() + pos) {
    pos = start;
    return fail(std::string("expected ") + what);
  }
  return true;
}

bool Parser::parseId(int &id) {
  if (!expect('%', "before a value id"))
    return false;
  size_t start = pos;
  int64_t v;
  if (!parseInteger(v, "a value id"))
    return false;
  if (v < 0 || v > (1 << 30))
    return failAt(start, "value id " + std::to_string(v) + " is out of range");
  id = static_cast<int>(v);
  return true;
}

bool Parser::parseDType(DType &dtype) {
  std::string_view name = identifier();
  for (int t = 0; t <= static_cast<int>(DType::Float64); ++t)
    if (name == dtypeName(static_cast<DType>(t))) {
      dtype = static_cast<DType>(t);
      return true;
    }
  pos -= name.size();
  return fail("expected a dtype (bool, u8, i8, i16, i32, i64, f16, bf16, f32 or f64)");
}

bool Parser::parseDims(std::vector<int64_t> &dims, char open, char close, const char *what) {
  return parseSequence(open, close, std::string("the ") + what + "s", [&] {
    size_t start = (skipBlanks(), pos);
    int64_t v;
    if (!parseInteger(v, what))
      return false;
    if (v < 0)
      return failAt(start, std::string("a negative ") + what);
    dims.push_back(v);
    return true;
  });
}

bool Parser::parseType(TensorSpec &spec) {
  size_t start = (skipBlanks(), pos);
  if (!parseDType(spec.dtype) || !parseDims(spec.sizes, '[', ']', "size") ||
      !parseDims(spec.strides, '{', '}', "stride"))
    return false;
  if (spec.sizes.size() != spec.strides.size())
    return failAt(start, "a type with " + std::to_string(spec.sizes.size()) + " sizes but " +
                             std::to_string(spec.strides.size()) + " strides");
  return true;
}

bool Parser::parseString(std::string &s) {
  if (!expect('"', "before a string"))
    return false;
  size_t open = pos - 1;
  // A string ends on its line: the printer escapes line breaks.
  while (pos < text.size() && text[pos] != '"' && text[pos] != '\n') {
    char c = text[pos++];
    if (c != '\\') {
      s += c;
      continue;
    }
    if (pos < text.size() && (text[pos] == '"' || text[pos] == '\\')) {
      s += text[pos++];
      continue;
    }
    unsigned value = 0;
    if (pos + 2 >= text.size() || text[pos] != 'x' ||
        std::from_chars(text.data() + pos + 1, text.data() + pos + 3, value, 16).ptr !=
            text.data() + pos + 3)
      return failAt(pos - 1, "expected an escape \\\", \\\\ or \\xHH in a string");
    s += static_cast<char>(value);
    pos += 3;
  }
  if (pos >= text.size() || text[pos] != '"')
    return failAt(open, "a string that is not closed on its line");
  ++pos;
  return true;
}

bool Parser::parseNumber(ArgValue &a) {
  skipBlanks();
  size_t start = pos;
  bool negative = pos < text.size() && text[pos] == '-';
  pos += negative;
  std::string_view name = identifier();
  if (name == "inf" || name == "nan") {
    a.kind = ArgValue::Double;
    double v = name == "inf" ? HUGE_VAL : std::nan("");
    a.d = negative ? -v : v;
    return true;
  }
  if (!name.empty() || pos >= text.size() || !std::isdigit(static_cast<unsigned char>(text[pos])))
    return failAt(start, "expected a number");
  bool isDouble = false;
  while (pos < text.size()) {
    char c = text[pos];
    bool exponentSign = (c == '+' || c == '-') && (text[pos - 1] == 'e' || text[pos - 1] == 'E');
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != 'E' &&
        !exponentSign)
      break;
    isDouble = isDouble || !std::isdigit(static_cast<unsigned char>(c));
    ++pos;
  }
  if (!isDouble) {
    a.kind = ArgValue::Int;
    pos = start;
    return parseInteger(a.i, "an integer");
  }
  std::string token(text.substr(start, pos - start));
  char *end = nullptr;
  a.kind = ArgValue::Double;
  a.d = std::strtod(token.c_str(), &end);
  if (end != token.c_str() + token.size())
    return failAt(start, "malformed number '" + token + "'");
  if (std::isinf(a.d))
    return failAt(start, "number '" + token + "' is out of the range of a double");
  return true;
}

bool Parser::parseElement(ArgValue &a) {
  skipBlanks();
  size_t start = pos;
  if (peek('%')) {
    a.kind = ArgValue::Tensor;
    a.tensors.resize(1);
    return parseId(a.tensors[0]) && use(a.tensors[0], start);
  }
  std::string_view word = identifier();
  if (word == "none" || word == "true" || word == "false") {
    a.kind = word == "none" ? ArgValue::None : ArgValue::Bool;
    a.b = word == "true";
    return true;
  }
  pos = start;
  if (peek('-') || (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ||
      word == "inf" || word == "nan")
    return parseNumber(a);
  return fail("expected a value (%id, none, true, false or a number)");
}

/// The list kind that holds elements of `kind`.
ArgValue::Kind listOf(ArgValue::Kind kind) {
  switch (kind) {
  case ArgValue::Tensor:
  case ArgValue::None: return ArgValue::TensorList;
  case ArgValue::Bool: return ArgValue::BoolList;
  case ArgValue::Int: return ArgValue::IntList;
  default: return ArgValue::DoubleList;
  }
}

const char *listName(ArgValue::Kind kind) {
  switch (kind) {
  case ArgValue::TensorList: return "a tensor";
  case ArgValue::BoolList: return "a bool";
  case ArgValue::IntList: return "an int";
  default: return "a double";
  }
}

bool Parser::parseList(ArgValue &list, ArgValue::Kind kind) {
  list.kind = kind == ArgValue::None ? ArgValue::IntList : kind;
  return parseSequence('[', ']', "the list's elements", [&] {
    size_t start = (skipBlanks(), pos);
    ArgValue e;
    if (!parseElement(e))
      return false;
    if (kind == ArgValue::None)
      list.kind = kind = listOf(e.kind);
    if (listOf(e.kind) != kind)
      return failAt(start, std::string(listName(kind)) + " list cannot hold this element");
    switch (kind) {
    case ArgValue::TensorList:
      list.tensors.push_back(e.kind == ArgValue::Tensor ? e.tensors[0] : -1);
      break;
    case ArgValue::BoolList: list.ints.push_back(e.b); break;
    case ArgValue::IntList: list.ints.push_back(e.i); break;
    default: list.doubles.push_back(e.d); break;
    }
    return true;
  });
}

bool Parser::parseArg(ArgValue &a) {
  skipBlanks();
  size_t start = pos;
  if (peek('"')) {
    a.kind = ArgValue::String;
    return parseString(a.s);
  }
  if (peek('['))
    return parseList(a, ArgValue::None);
  std::string_view word = identifier();
  if (word == "tensors" || word == "bools" || word == "doubles")
    return parseList(a, word == "tensors" ? ArgValue::TensorList
                        : word == "bools" ? ArgValue::BoolList
                                          : ArgValue::DoubleList);
  if (word == "device") {
    a.kind = ArgValue::Device;
    return expect('(', "after 'device'") && parseString(a.s) &&
           expect(')', "after the device name");
  }
  if (word == "scalar") {
    if (!expect('(', "after 'scalar'") || !parseNumber(a) ||
        !expect(':', "between a scalar's value and its dtype") || !parseDType(a.dtype))
      return false;
    a.isFloat = a.kind == ArgValue::Double;
    a.kind = ArgValue::ScalarTensor;
    return expect(')', "after the scalar's dtype");
  }
  pos = start;
  return parseElement(a);
}

bool Parser::parseOpName(SegmentNode &n) {
  std::string_view part = identifier();
  if (part.empty())
    return fail("expected an op name such as aten::add.Tensor");
  n.op = std::string(part);
  while (peek(':') && text.compare(pos, 2, "::") == 0) {
    pos += 2;
    part = identifier();
    if (part.empty())
      return fail("expected the rest of the op name after '::'");
    n.op += "::" + std::string(part);
  }
  if (!consume('.'))
    return true;
  part = identifier();
  if (part.empty())
    return fail("expected an overload name after '.'");
  n.overload = std::string(part);
  return true;
}

bool Parser::define(int id, const TensorSpec &spec, size_t at) {
  if (!specs.emplace(id, spec).second)
    return failAt(at, "value %" + std::to_string(id) + " is defined twice");
  return true;
}

bool Parser::use(int id, size_t at) {
  if (computed.count(id))
    return true;
  return failAt(at, "value %" + std::to_string(id) +
                        (specs.count(id) ? " is declared but nothing computes it (is an '=' missing?)"
                                         : " is used before it is defined"));
}

bool Parser::parseStatement(Segment &seg) {
  SegmentNode n;
  struct Result {
    int id;
    TensorSpec spec;
    size_t at;
  };
  std::vector<Result> results;
  if (peek('%') || peekKeyword("none")) {
    do {
      size_t at = (skipBlanks(), pos);
      if (consumeKeyword("none")) {
        n.outputs.push_back(-1);
        continue;
      }
      Result r{0, {}, at};
      if (!parseId(r.id) || !expect(':', "between a value and its type") || !parseType(r.spec))
        return false;
      n.outputs.push_back(r.id);
      results.push_back(std::move(r));
    } while (consume(','));
    if (!consume('=')) {
      if (n.outputs.size() == 1 && results.size() == 1)
        return define(results[0].id, results[0].spec, results[0].at);
      return fail("expected '=' between a node's results and its op");
    }
  }
  if (!parseOpName(n) || !parseSequence('(', ')', "the arguments of " + n.op, [&] {
        n.args.emplace_back();
        return parseArg(n.args.back());
      }))
    return false;
  n.mutates = consumeKeyword("mutates");
  for (const Result &r : results) {
    if (!define(r.id, r.spec, r.at))
      return false;
    computed.insert(r.id);
  }
  seg.nodes.push_back(std::move(n));
  return true;
}

bool Parser::parseHeader(Segment &seg) {
  if (!consumeKeyword("segment"))
    return fail("expected 'segment'");
  if (!expect('@', "before the segment's device"))
    return false;
  if (peek('"')) {
    seg.device.clear();
    if (!parseString(seg.device))
      return false;
  } else {
    size_t start = pos;
    while (pos < text.size() && isNameChar(text[pos]))
      ++pos;
    if (pos == start)
      return fail("expected a device such as cpu or cuda:0");
    seg.device = std::string(text.substr(start, pos - start));
  }
  return parseSequence('(', ')', "the segment's inputs", [&] {
    size_t at = (skipBlanks(), pos);
    int id;
    TensorSpec spec;
    if (!parseId(id) || !expect(':', "between an input and its type") || !parseType(spec) ||
        !define(id, spec, at))
      return false;
    computed.insert(id);
    seg.inputs.push_back(id);
    return true;
  });
}

bool Parser::parse(Segment &seg) {
  if (!parseHeader(seg) || !expect('{', "before the segment's body"))
    return false;
  while (!consumeKeyword("return")) {
    if (atEnd() || peek('}'))
      return fail("expected 'return' to end the segment's body");
    if (!parseStatement(seg))
      return false;
  }
  if (!peek('}')) {
    do {
      size_t at = (skipBlanks(), pos);
      int id;
      if (!parseId(id) || !use(id, at))
        return false;
      seg.outputs.push_back(id);
    } while (consume(','));
  }
  size_t close = (skipBlanks(), pos);
  if (!expect('}', "after the returned values"))
    return false;
  if (!atEnd())
    return fail("expected the end of the input after the segment");
  // Value ids index Segment::values: every id below the largest is declared.
  for (const auto &[id, spec] : specs) {
    if (id != (int)seg.values.size())
      return failAt(close, "value %" + std::to_string(seg.values.size()) +
                               " is never declared (ids count up from %0 without gaps)");
    seg.values.push_back(spec);
  }
  return true;
}

} // namespace

bool parseSegment(std::string_view text, Segment &segment, std::string &error) {
  error.clear();
  Segment parsed;
  if (!Parser(text, error).parse(parsed))
    return false;
  segment = std::move(parsed);
  return true;
}

} // namespace tgc
