// Package signatures (issue 20): Ed25519 over the stored sections, checked
// before anything is decompressed when a trusted key is required.
#include "runtime/PackageFormat.h"

#include <gtest/gtest.h>

namespace tgc {
namespace {

using Kind = PackageError::Kind;

std::vector<SectionInput> sampleSections() {
  std::string weights(5000, '\0');
  for (size_t i = 0; i < weights.size(); ++i)
    weights[i] = char((i * 7919) % 251);
  return {{"meta.json", "{\"backend\": \"cpu\"}"}, {"module.pt", weights, true},
          {"cpu.0.so", std::string("\x7f" "ELF native code", 16)}};
}

/// decodePackage's error kind and message, or Kind::Io if it decoded.
std::pair<Kind, std::string> decodeError(const std::string &file,
                                         const std::vector<std::string> &trusted) {
  try {
    decodePackage(file, "pkg", trusted);
  } catch (const PackageError &e) {
    return {e.kind(), e.what()};
  }
  return {Kind::Io, "decoded"};
}

TEST(PackageSigning, ASignedPackageLoadsWithItsKeyAndIsRefusedOtherwise) {
  SigningKey mine = generateSigningKey(), theirs = generateSigningKey();
  ASSERT_EQ(mine.secret.size(), 64u);
  ASSERT_EQ(mine.publicKey.size(), 32u);
  std::string signedFile = encodePackage(sampleSections(), &mine);
  std::string unsignedFile = encodePackage(sampleSections());

  DecodedPackage pkg = decodePackage(signedFile, "pkg", {mine.publicKey});
  EXPECT_EQ(pkg.sections.at("module.pt"), sampleSections()[1].bytes) << "decompressed after the check";
  EXPECT_EQ(pkg.sections.count("signature"), 1u);
  EXPECT_NO_THROW(decodePackage(signedFile, "pkg", {theirs.publicKey, mine.publicKey}));
  EXPECT_NO_THROW(decodePackage(signedFile, "pkg")) << "no key required: the signature is not needed";

  auto [kind, why] = decodeError(signedFile, {theirs.publicKey});
  EXPECT_EQ(kind, Kind::Signature);
  EXPECT_NE(why.find("is signed by key"), std::string::npos) << why;
  std::tie(kind, why) = decodeError(unsignedFile, {mine.publicKey});
  EXPECT_EQ(kind, Kind::Signature);
  EXPECT_NE(why.find("is not signed"), std::string::npos) << why;
}

TEST(PackageSigning, EveryModificationAfterSigningIsRefused) {
  SigningKey key = generateSigningKey();
  std::vector<SectionInput> sections = sampleSections();
  std::string file = encodePackage(sections, &key);
  DecodedPackage original = decodePackage(file, "pkg");
  SectionInput signature{"signature", original.sections.at("signature"), false};
  // A writer who can recompute every checksum (they are not secret) but
  // not the signature: each change re-sealed around the old signature.
  auto resealed = [&](std::vector<SectionInput> changed) {
    changed.push_back(signature);
    return encodePackage(changed);
  };
  std::vector<std::pair<std::string, std::vector<SectionInput>>> attacks;
  {
    auto s = sections;
    s[2].bytes[5] ^= 1; // patched native code
    attacks.push_back({"a patched kernel", s});
  }
  {
    auto s = sections;
    s[1].compress = false; // same bytes stored another way
    attacks.push_back({"a changed compression flag", s});
  }
  {
    auto s = sections;
    s.pop_back();
    attacks.push_back({"a removed section", s});
  }
  {
    auto s = sections;
    s.push_back({"cpu.1.so", "more native code"});
    attacks.push_back({"an added section", s});
  }
  {
    auto s = sections;
    s[0].name = "meta.jsom";
    attacks.push_back({"a renamed section", s});
  }
  {
    auto s = sections;
    std::swap(s[0], s[2]);
    attacks.push_back({"reordered sections", s});
  }
  for (const auto &[what, s] : attacks) {
    std::string forged = resealed(s);
    EXPECT_NO_THROW(decodePackage(forged, "pkg")) << what << ": the checksums are valid";
    auto [kind, why] = decodeError(forged, {key.publicKey});
    EXPECT_EQ(kind, Kind::Signature) << what;
    EXPECT_NE(why.find("modified after it was signed"), std::string::npos) << what << ": " << why;
  }
  // The signature itself: a flipped bit, a swapped-in signer, a bad length.
  std::string sig = signature.bytes;
  sig[sig.size() - 1] ^= 1;
  std::vector<SectionInput> s = sections;
  s.push_back({"signature", sig});
  EXPECT_EQ(decodeError(encodePackage(s), {key.publicKey}).first, Kind::Signature);
  s.back().bytes = signature.bytes.substr(0, 50);
  EXPECT_NE(decodeError(encodePackage(s), {key.publicKey}).second.find("malformed"),
            std::string::npos);
  s.back() = {"signature", signature.bytes, true};
  EXPECT_EQ(decodeError(encodePackage(s), {key.publicKey}).first, Kind::Signature)
      << "a compressed signature section is malformed";
}

TEST(PackageSigning, KeyFilesRoundTripAndBadKeysAreClearErrors) {
  SigningKey key = generateSigningKey();
  SigningKey back = parseSecretKey(secretKeyText(key));
  EXPECT_EQ(back.secret, key.secret);
  EXPECT_EQ(back.publicKey, key.publicKey) << "the public key is derived from the secret one";
  std::string pubText = publicKeyText(key.publicKey);
  EXPECT_EQ(pubText.rfind("tgc-ed25519-public-key ", 0), 0u);
  EXPECT_EQ(parsePublicKey(pubText), key.publicKey);
  EXPECT_EQ(parsePublicKey("  " + pubText.substr(23, 64) + "\n"), key.publicKey) << "bare hex";
  EXPECT_THROW(parsePublicKey("tgc-ed25519-public-key abc"), std::invalid_argument);
  EXPECT_THROW(parsePublicKey(std::string(64, 'g')), std::invalid_argument);
  EXPECT_THROW(parseSecretKey(pubText), std::invalid_argument) << "a public key is not a secret one";
  EXPECT_THROW(parseSecretKey(""), std::invalid_argument);
}

} // namespace
} // namespace tgc
