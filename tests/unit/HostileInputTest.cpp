// Hostile input (issue 20 point 4): seeded mutations of packages, cache
// entries and plans. A hostile writer can recompute every checksum, so
// mutations are also "re-sealed" (header, table and section checksums made
// valid again) to reach the parsers behind them. The only acceptable
// outcomes are a clean PackageError / a cache miss / a parse error, or a
// successful decode; never a crash, another exception, a hang or an
// allocation sized by a claimed length. Built twice: in tgc_cache_tests and,
// with AddressSanitizer and UBSan, as tgc_hostile_input_asan (no LibTorch).
#include "runtime/ArtifactCache.h"
#include "runtime/PackageFormat.h"
#include "runtime/Plan.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <unistd.h>

namespace tgc {
namespace {

constexpr size_t kHeader = 112, kHash = 16;

int iterations() {
  const char *n = std::getenv("TGC_HOSTILE_ITERATIONS");
  return n && *n ? std::atoi(n) : 3000;
}

std::vector<SectionInput> sections() {
  std::string weights(20000, '\0');
  for (size_t i = 0; i < weights.size(); ++i)
    weights[i] = char((i * 31) % 7 == 0 ? i % 251 : 0);
  return {{"meta.json", R"({"backend": "cpu", "segments": []})"},
          {"module.pt", weights, true},
          {"plan.0", "tgc-plan text", true},
          {"cpu.0.so", std::string(300, 'k')}};
}

uint64_t u64At(const std::string &f, size_t at) {
  uint64_t v = 0;
  std::memcpy(&v, f.data() + at, 8);
  return v;
}

/// Makes every checksum of `f` valid again where the layout still allows.
void reseal(std::string &f) {
  if (f.size() < kHeader)
    return;
  f.replace(96, kHash, contentHash(f.substr(0, 96)));
  uint64_t count = u64At(f, 80), tableBytes = u64At(f, 88);
  if (tableBytes > f.size() - kHeader || f.size() - kHeader - tableBytes < kHash)
    return;
  // Section checksums first (they are inside the table), then the table's.
  size_t pos = kHeader, end = kHeader + tableBytes;
  for (uint64_t i = 0; i < count && pos + 4 <= end; ++i) {
    uint32_t nameLen;
    std::memcpy(&nameLen, f.data() + pos, 4);
    pos += 4;
    if (nameLen > end - pos || end - pos - nameLen < 1 + 24 + kHash)
      break;
    pos += nameLen + 1;
    uint64_t offset = u64At(f, pos), stored = u64At(f, pos + 8);
    pos += 24;
    if (offset <= f.size() && stored <= f.size() - offset)
      f.replace(pos, kHash, contentHash(f.substr(offset, stored)));
    pos += kHash;
  }
  f.replace(end, kHash, contentHash(f.substr(kHeader, tableBytes)));
}

/// One random mutation: byte flips, an overwritten length or offset
/// (often a huge one), a truncation, inserted or deleted bytes.
void mutate(std::string &f, std::mt19937_64 &rng) {
  auto pick = [&](size_t n) { return n ? size_t(rng() % n) : 0; };
  switch (rng() % 6) {
  case 0: // a few flipped bytes anywhere
    for (int i = 0, n = 1 + pick(4); i < n && !f.empty(); ++i)
      f[pick(f.size())] ^= char(1 + pick(255));
    break;
  case 1: { // a huge or off-by-some 64-bit value at an aligned-ish spot
    if (f.size() < 8)
      break;
    size_t at = pick(std::min<size_t>(f.size() - 8, kHeader + 400));
    const uint64_t values[] = {~0ull, 1ull << 62, 1ull << 35, u64At(f, at) + 1, u64At(f, at) - 1,
                               uint64_t(f.size()), 0};
    uint64_t v = values[pick(7)];
    std::memcpy(f.data() + at, &v, 8);
    break;
  }
  case 2: // truncated
    f.resize(pick(f.size() + 1));
    break;
  case 3: // inserted bytes
    f.insert(pick(f.size() + 1), std::string(1 + pick(16), char(pick(256))));
    break;
  case 4: // deleted bytes
    if (!f.empty())
      f.erase(pick(f.size()), 1 + pick(16));
    break;
  default: { // a 32-bit name length or count
    if (f.size() < 4)
      break;
    size_t at = pick(std::min<size_t>(f.size() - 4, kHeader + 400));
    uint32_t v = rng() % 2 ? 0xffffffffu : uint32_t(pick(1 << 20));
    std::memcpy(f.data() + at, &v, 4);
  }
  }
}

TEST(HostileInput, MutatedPackagesAreCleanErrors) {
  SigningKey key = generateSigningKey();
  const std::string plain = encodePackage(sections()), signedFile = encodePackage(sections(), &key);
  std::mt19937_64 rng(20);
  int decoded = 0, refused = 0;
  for (int i = 0; i < iterations(); ++i) {
    std::string f = i % 2 ? plain : signedFile;
    for (int m = 0, n = 1 + int(rng() % 3); m < n; ++m)
      mutate(f, rng);
    if (rng() % 3 != 0)
      reseal(f);
    for (bool requireKey : {false, true}) {
      try {
        DecodedPackage p = decodePackage(f, "mutated", requireKey ? std::vector<std::string>{key.publicKey}
                                                                 : std::vector<std::string>{});
        ++decoded;
        for (const auto &[name, bytes] : p.sections)
          ASSERT_LE(bytes.size(), 1u << 20) << "a section larger than any the package held";
      } catch (const PackageError &) {
        ++refused;
      } catch (const std::exception &e) {
        FAIL() << "iteration " << i << ": not a PackageError: " << e.what();
      }
    }
  }
  std::cout << decoded << " mutated packages decoded, " << refused << " refused\n";
  EXPECT_GT(refused, iterations()) << "the mutations must reach the checks";
}

TEST(HostileInput, ClaimedHugeSizesAllocateNothingLikeThem) {
  // A frame that declares 32 GiB, with the table agreeing and every
  // checksum valid: the decoder must fail after what the bytes really hold.
  std::vector<SectionInput> s = {{"module.pt", std::string(1000, 'x'), true}};
  std::string f = encodePackage(s);
  DecodedPackage ok = decodePackage(f, "pkg");
  ASSERT_EQ(ok.sections.at("module.pt").size(), 1000u);
  // The zstd frame header's content size: rewrite the frame with a 32 GiB
  // claim by hand (single-segment flag off, 8-byte size field).
  std::string stored = f.substr(f.size() - ok.infos[0].stored);
  ASSERT_GE(stored.size(), 6u);
  const uint64_t claim = uint64_t(32) << 30;
  std::string forged = stored.substr(0, 4);             // magic
  forged += char(0xC0);                                 // FCS field 8 bytes, no single segment
  forged += char(0x58);                                 // window descriptor: 8 MiB
  forged.append(reinterpret_cast<const char *>(&claim), 8);
  unsigned char fhd = (unsigned char)stored[4];
  size_t oldHeader = 5 + ((fhd & 0x20) ? 0 : 1) + (fhd & 3 ? (1 << ((fhd & 3) - 1)) : 0) +
                     ((fhd >> 6) == 0 ? ((fhd & 0x20) ? 1 : 0) : (1 << (fhd >> 6)));
  forged += stored.substr(oldHeader);
  std::vector<SectionInput> raw = {{"module.pt", forged, false}};
  std::string pkg = encodePackage(raw);
  // Mark the section compressed with the claimed raw size, then re-seal.
  size_t entry = kHeader + 4 + std::strlen("module.pt");
  pkg[entry] = 1;
  std::memcpy(pkg.data() + entry + 1 + 16, &claim, 8);
  reseal(pkg);
  try {
    decodePackage(pkg, "bomb");
    FAIL() << "a 1000-byte frame decoded to 32 GiB";
  } catch (const PackageError &e) {
    // Past the declared-size check: the frame itself was decoded and fell short.
    EXPECT_NE(std::string(e.what()).find("does not decompress"), std::string::npos) << e.what();
  }
}

TEST(HostileInput, MutatedCacheEntriesAreMisses) {
  namespace fs = std::filesystem;
  // Per process: this file also runs as hostile_input.asan, in parallel under ctest -j.
  fs::path dir = fs::path(testing::TempDir()) /
                 ("tgc-hostile-entries-" + std::to_string(::getpid())) / "kernels";
  fs::create_directories(dir);
  const std::string good = ArtifactCache::encode(Layer::Kernel, "k", std::string(5000, 's'));
  const std::string path = (dir / "k.tgc").string();
  std::mt19937_64 rng(21);
  int accepted = 0;
  for (int i = 0; i < iterations(); ++i) {
    std::string f = good;
    mutate(f, rng);
    { std::ofstream(path, std::ios::binary | std::ios::trunc) << f; }
    std::string why, payload;
    if (ArtifactCache::verifyEntry(path, &why, &payload)) {
      ++accepted;
      EXPECT_EQ(f, good) << "a changed entry verified";
    } else {
      EXPECT_FALSE(why.empty());
    }
  }
  EXPECT_LT(accepted, iterations() / 10);
  // POSIX calls: std::filesystem::remove_all binds to libtorch's copy, which crashes here.
  ::unlink(path.c_str());
  ::rmdir(dir.c_str());
  ::rmdir(dir.parent_path().c_str());
}

TEST(HostileInput, MutatedPlansAreParseErrors) {
  Plan p;
  p.device = "cpu";
  p.values = {{{4, 8}, {8, 1}, DType::Float32}, {{4, 8}, {8, 1}, DType::Float32}};
  p.inputs = {0};
  p.outputs = {1};
  KernelStep k;
  k.name = "k0";
  k.inputs = {0};
  k.outputs = {1};
  k.numel = 32;
  p.kernels.push_back(k);
  p.steps = {{Step::Kernel, 0}};
  p.cpuSource = "extern \"C\" void k0(void *const *b) {}";
  const std::string good = serializePlan(p);
  std::mt19937_64 rng(22);
  for (int i = 0; i < iterations(); ++i) {
    std::string f = good;
    for (int m = 0, n = 1 + int(rng() % 3); m < n; ++m)
      mutate(f, rng);
    Plan out;
    std::string error;
    try {
      if (!deserializePlan(f, out, error))
        EXPECT_FALSE(error.empty());
    } catch (const std::exception &e) {
      FAIL() << "iteration " << i << ": deserializePlan threw " << e.what();
    }
  }
}

} // namespace
} // namespace tgc
