//===- ByteStream.h - little binary writer and bounds-checked reader -------===//
//
// The one encoding of tgc's binary formats (serialized Plans, AOT package
// tables): fixed-width integers in host order (little-endian on every target
// tgc supports) and length-prefixed strings. The reader trusts no length.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_BYTESTREAM_H
#define TGC_RUNTIME_BYTESTREAM_H

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace tgc {

class Writer {
public:
  void u8(uint8_t v) { out.push_back(char(v)); }
  void u32(uint32_t v) { out.append(reinterpret_cast<const char *>(&v), 4); }
  void raw(const std::string &s) { out += s; }
  void i64(int64_t v) { out.append(reinterpret_cast<const char *>(&v), 8); }
  void f64(double v) { out.append(reinterpret_cast<const char *>(&v), 8); }
  void str(const std::string &s) {
    i64(s.size());
    out += s;
  }
  void ints(const std::vector<int64_t> &v) {
    i64(v.size());
    for (int64_t x : v)
      i64(x);
  }
  void ids(const std::vector<int> &v) {
    i64(v.size());
    for (int x : v)
      i64(x);
  }
  std::string out;
};

/// Reads with bounds checks; throws std::runtime_error on malformed data.
class Reader {
public:
  explicit Reader(const std::string &d) : data(d) {}
  uint8_t u8() { return uint8_t(take(1)[0]); }
  uint32_t u32() {
    uint32_t v;
    std::memcpy(&v, take(4), 4);
    return v;
  }
  /// `n` bytes as they are.
  std::string raw(size_t n) { return std::string(take(n), n); }
  int64_t i64() {
    int64_t v;
    std::memcpy(&v, take(8), 8);
    return v;
  }
  double f64() {
    double v;
    std::memcpy(&v, take(8), 8);
    return v;
  }
  size_t count(size_t elementBytes = 1) {
    int64_t n = i64();
    if (n < 0 || uint64_t(n) * elementBytes > data.size() - pos)
      throw std::runtime_error("count " + std::to_string(n) + " exceeds the data");
    return size_t(n);
  }
  std::string str() {
    size_t n = count();
    return std::string(take(n), n);
  }
  std::vector<int64_t> ints() {
    std::vector<int64_t> v(count(8));
    for (int64_t &x : v)
      x = i64();
    return v;
  }
  std::vector<int> ids() {
    std::vector<int> v(count(8));
    for (int &x : v)
      x = int(i64());
    return v;
  }
  bool done() const { return pos == data.size(); }
  size_t offset() const { return pos; }

private:
  const char *take(size_t n) {
    if (n > data.size() - pos)
      throw std::runtime_error("unexpected end of data");
    const char *p = data.data() + pos;
    pos += n;
    return p;
  }
  const std::string &data;
  size_t pos = 0;
};

} // namespace tgc

#endif // TGC_RUNTIME_BYTESTREAM_H
