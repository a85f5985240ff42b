// The artifact cache: keys, entry integrity, eviction, plan serialization.
#include "runtime/ArtifactCache.h"
#include "runtime/Plan.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;

namespace tgc {
namespace {

class CacheDir : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::path(testing::TempDir()) /
          ("tgc-cache-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    // (not fs::remove_all: LibTorch, loaded with tgc_runtime, exports a
    // broken copy that can win symbol resolution)
    ASSERT_EQ(std::system(("rm -rf '" + dir.string() + "'").c_str()), 0);
    setenv("TGC_CACHE_DIR", dir.c_str(), 1);
    unsetenv("TGC_CACHE_MAX_BYTES");
  }
  std::string entryPath(Layer l, const std::string &key) {
    return ArtifactCache::pathOf(dir.string(), l, key);
  }
  fs::path dir;
};

TEST(CacheKey, EveryInputChangesTheKey) {
  KeyInputs base = baseKeyInputs();
  base.content = "graph";
  base.toolchain = "c++ 12 -O3";
  base.arch = "sm_90";
  base.options = "mode=default";
  std::string k0 = buildKey(base);
  EXPECT_EQ(buildKey(base), k0); // deterministic
  std::vector<std::string KeyInputs::*> fields = {
      &KeyInputs::content, &KeyInputs::tgcVersion, &KeyInputs::codegenHash,
      &KeyInputs::toolchain, &KeyInputs::arch, &KeyInputs::torchVersion, &KeyInputs::options};
  for (auto f : fields) {
    KeyInputs changed = base;
    changed.*f += "x";
    EXPECT_NE(buildKey(changed), k0);
  }
  // Field boundaries matter: moving a character between fields changes it.
  KeyInputs a = base, b = base;
  a.content = "ab";
  a.arch = "c";
  b.content = "a";
  b.arch = "bc";
  EXPECT_NE(buildKey(a), buildKey(b));
  EXPECT_FALSE(baseKeyInputs().codegenHash.empty());
  EXPECT_EQ(baseKeyInputs().torchVersion.rfind("2.11", 0), 0u);
}

TEST_F(CacheDir, RoundTripAndMisses) {
  ArtifactCache &c = ArtifactCache::instance();
  EXPECT_FALSE(c.get(Layer::Kernel, "k1"));
  ASSERT_TRUE(c.put(Layer::Kernel, "k1", "payload-1"));
  ASSERT_TRUE(c.put(Layer::Graph, "k1", "graph-1"));
  ASSERT_TRUE(c.put(Layer::Autotune, "k1", "best=3"));
  EXPECT_EQ(c.get(Layer::Kernel, "k1").value_or(""), "payload-1");
  EXPECT_EQ(c.get(Layer::Graph, "k1").value_or(""), "graph-1");
  EXPECT_EQ(c.get(Layer::Autotune, "k1").value_or(""), "best=3");
  EXPECT_EQ(ArtifactCache::list(dir.string()).size(), 3u);
}

TEST_F(CacheDir, FlippedByteIsEvictedNotLoaded) {
  ArtifactCache &c = ArtifactCache::instance();
  std::string payload(1000, 'a');
  ASSERT_TRUE(c.put(Layer::Kernel, "flip", payload));
  std::string path = entryPath(Layer::Kernel, "flip");
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-10, std::ios::end);
    f.put('b');
  }
  std::string why;
  EXPECT_FALSE(ArtifactCache::verifyEntry(path, &why));
  EXPECT_NE(why.find("checksum"), std::string::npos) << why;
  EXPECT_FALSE(c.get(Layer::Kernel, "flip"));
  EXPECT_FALSE(fs::exists(path)); // evicted
  ASSERT_TRUE(c.put(Layer::Kernel, "flip", payload)); // rebuilt
  EXPECT_EQ(c.get(Layer::Kernel, "flip").value_or(""), payload);
}

TEST_F(CacheDir, TruncatedAndForeignFilesAreMisses) {
  ArtifactCache &c = ArtifactCache::instance();
  ASSERT_TRUE(c.put(Layer::Graph, "trunc", std::string(500, 'z')));
  std::string path = entryPath(Layer::Graph, "trunc");
  fs::resize_file(path, fs::file_size(path) - 7);
  EXPECT_FALSE(c.get(Layer::Graph, "trunc"));
  EXPECT_FALSE(fs::exists(path));
  std::string foreign = entryPath(Layer::Graph, "foreign");
  std::ofstream(foreign) << "#!/bin/sh\necho not a cache entry\n";
  EXPECT_FALSE(c.get(Layer::Graph, "foreign"));
  EXPECT_FALSE(fs::exists(foreign));
}

TEST_F(CacheDir, SwappedEntriesAreDetected) {
  ArtifactCache &c = ArtifactCache::instance();
  ASSERT_TRUE(c.put(Layer::Kernel, "aaaa", "A"));
  ASSERT_TRUE(c.put(Layer::Kernel, "bbbb", "B"));
  std::string a = entryPath(Layer::Kernel, "aaaa"), b = entryPath(Layer::Kernel, "bbbb");
  fs::rename(a, a + ".x");
  fs::rename(b, a);
  fs::rename(a + ".x", b);
  EXPECT_FALSE(c.get(Layer::Kernel, "aaaa"));
  EXPECT_FALSE(c.get(Layer::Kernel, "bbbb"));
  // An entry moved to another layer is refused as well.
  ASSERT_TRUE(c.put(Layer::Kernel, "cccc", "C"));
  fs::create_directories(dir / "graphs");
  fs::rename(entryPath(Layer::Kernel, "cccc"), entryPath(Layer::Graph, "cccc"));
  EXPECT_FALSE(c.get(Layer::Graph, "cccc"));
}

TEST_F(CacheDir, SizeCapEvictsLeastRecentlyUsed) {
  ArtifactCache &c = ArtifactCache::instance();
  std::string kb(1000, 'x');
  ASSERT_TRUE(c.put(Layer::Kernel, "old", kb));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(c.put(Layer::Kernel, "mid", kb));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(c.get(Layer::Kernel, "old")); // used again: now the newest
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  setenv("TGC_CACHE_MAX_BYTES", "2500", 1); // room for two entries
  ASSERT_TRUE(c.put(Layer::Kernel, "new", kb));
  unsetenv("TGC_CACHE_MAX_BYTES");
  EXPECT_TRUE(fs::exists(entryPath(Layer::Kernel, "old")));
  EXPECT_FALSE(fs::exists(entryPath(Layer::Kernel, "mid")));
  EXPECT_TRUE(fs::exists(entryPath(Layer::Kernel, "new")));
}

TEST_F(CacheDir, DisabledCacheTouchesNoDisk) {
  setenv("TGC_DISABLE_CACHE", "1", 1);
  ArtifactCache &c = ArtifactCache::instance();
  EXPECT_FALSE(c.put(Layer::Kernel, "k", "v"));
  EXPECT_FALSE(c.get(Layer::Kernel, "k"));
  unsetenv("TGC_DISABLE_CACHE");
  EXPECT_FALSE(fs::exists(dir / "kernels"));
}

TEST_F(CacheDir, ADirectorysCacheIsItsOwnAndScopesRouteCurrent) {
  fs::path other = dir / "other";
  ArtifactCache &mine = ArtifactCache::forDirectory(other.string());
  EXPECT_EQ(&ArtifactCache::forDirectory(other.string() + "/"), &mine) << "one object per directory";
  EXPECT_EQ(mine.dir(), other.string());
  EXPECT_EQ(ArtifactCache::instance().dir(), dir.string()) << "instance() follows TGC_CACHE_DIR";
  ASSERT_TRUE(mine.put(Layer::Graph, "g", "in-other"));
  EXPECT_TRUE(fs::exists(ArtifactCache::pathOf(other.string(), Layer::Graph, "g")));
  EXPECT_FALSE(ArtifactCache::instance().get(Layer::Graph, "g")) << "not in the environment's";
  // current(): the environment's, unless a scope names another (nesting).
  EXPECT_EQ(&ArtifactCache::current(), &ArtifactCache::instance());
  {
    CacheScope scope(mine);
    EXPECT_EQ(&ArtifactCache::current(), &mine);
    EXPECT_EQ(ArtifactCache::current().get(Layer::Graph, "g").value_or(""), "in-other");
    {
      CacheScope inner(ArtifactCache::instance());
      EXPECT_EQ(&ArtifactCache::current(), &ArtifactCache::instance());
    }
    EXPECT_EQ(&ArtifactCache::current(), &mine);
    // Another thread does not inherit the scope.
    std::thread([&] { EXPECT_EQ(&ArtifactCache::current(), &ArtifactCache::instance()); }).join();
  }
  EXPECT_EQ(&ArtifactCache::current(), &ArtifactCache::instance());
}

TEST(CacheDirectory, EnvironmentOrder) {
  setenv("TGC_CACHE_DIR", "/a/b", 1);
  setenv("XDG_CACHE_HOME", "/x", 1);
  EXPECT_EQ(cacheDir(), "/a/b");
  unsetenv("TGC_CACHE_DIR");
  EXPECT_EQ(cacheDir(), "/x/tgc");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(cacheDir(), "/home/u/.cache/tgc");
  // No home: a name of this user's, never one shared /tmp/.cache/tgc.
  unsetenv("HOME");
  EXPECT_EQ(cacheDir(), "/tmp/tgc-cache-" + std::to_string(geteuid()));
}

// Trust: entries are native code, so only their owner may put them there.

mode_t modeOf(const fs::path &p) {
  struct stat st;
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

/// A valid entry written around the cache (as a hostile writer would).
void plant(const std::string &path, Layer layer, const std::string &key,
           const std::string &payload) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << ArtifactCache::encode(layer, key, payload);
}

TEST_F(CacheDir, DirectoriesArePrivateAndEntriesOwnerOnlyWhateverTheUmask) {
  mode_t old = ::umask(0);
  ASSERT_TRUE(ArtifactCache::instance().put(Layer::Kernel, "k", "payload"));
  ::umask(old);
  EXPECT_EQ(modeOf(dir), 0700u);
  for (const char *layer : {"kernels", "graphs", "autotune"})
    EXPECT_EQ(modeOf(dir / layer), 0700u) << layer;
  EXPECT_EQ(modeOf(entryPath(Layer::Kernel, "k")), 0600u);
  EXPECT_TRUE(ArtifactCache::audit(dir.string()).empty());
}

TEST_F(CacheDir, GroupWritableDirectoryIsNotLoadedFrom) {
  plant(entryPath(Layer::Kernel, "k"), Layer::Kernel, "k", "planted");
  ASSERT_EQ(::chmod(dir.c_str(), 0775), 0);
  ArtifactCache &c = ArtifactCache::instance();
  EXPECT_FALSE(c.get(Layer::Kernel, "k")) << "nothing is loaded from an unsafe directory";
  EXPECT_FALSE(c.put(Layer::Kernel, "k2", "v")) << "nor written to it";
  EXPECT_FALSE(fs::exists(entryPath(Layer::Kernel, "k2")));
  EXPECT_NE(checkCacheDirectory(dir.string(), false).find("writable by group or others (mode 0775)"),
            std::string::npos)
      << checkCacheDirectory(dir.string(), false);
  std::vector<std::string> problems = ArtifactCache::audit(dir.string());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("mode 0775"), std::string::npos) << problems[0];
}

TEST_F(CacheDir, GroupWritableLayerIsNotLoadedFrom) {
  plant(entryPath(Layer::Graph, "g"), Layer::Graph, "g", "planted");
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod((dir / "graphs").c_str(), 0770), 0);
  EXPECT_FALSE(ArtifactCache::instance().get(Layer::Graph, "g"));
  EXPECT_NE(checkCacheDirectory(dir.string(), false).find("its layer graphs is writable"),
            std::string::npos);
}

TEST_F(CacheDir, DirectoryOwnedByAnotherUserIsNotLoadedFrom) {
  if (geteuid() != 0)
    GTEST_SKIP() << "needs root to give the directory to another uid";
  plant(entryPath(Layer::Kernel, "k"), Layer::Kernel, "k", "planted");
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chown(dir.c_str(), 4242, 4242), 0);
  EXPECT_FALSE(ArtifactCache::instance().get(Layer::Kernel, "k"));
  EXPECT_NE(checkCacheDirectory(dir.string(), false).find("owned by uid 4242, not by this user"),
            std::string::npos)
      << checkCacheDirectory(dir.string(), false);
}

TEST_F(CacheDir, PlantedEntriesAreEvictedNotLoaded) {
  ArtifactCache &c = ArtifactCache::instance();
  ASSERT_TRUE(c.put(Layer::Kernel, "good", "mine"));
  // An entry writable by others, and a symbolic link to a valid entry
  // outside the cache: both are refused, then removed (not their targets).
  plant(entryPath(Layer::Kernel, "open"), Layer::Kernel, "open", "planted");
  ASSERT_EQ(::chmod(entryPath(Layer::Kernel, "open").c_str(), 0666), 0);
  fs::path outside = dir.string() + "-outside/kernels/link.tgc";
  plant(outside.string(), Layer::Kernel, "link", "planted");
  fs::create_symlink(outside, entryPath(Layer::Kernel, "link"));
  std::vector<std::string> problems = ArtifactCache::audit(dir.string());
  EXPECT_EQ(problems.size(), 2u);
  EXPECT_FALSE(c.get(Layer::Kernel, "open"));
  EXPECT_FALSE(c.get(Layer::Kernel, "link"));
  EXPECT_FALSE(fs::exists(fs::symlink_status(entryPath(Layer::Kernel, "open"))));
  EXPECT_FALSE(fs::exists(fs::symlink_status(entryPath(Layer::Kernel, "link"))));
  EXPECT_TRUE(fs::exists(outside)) << "the link is removed, not what it points to";
  EXPECT_EQ(c.get(Layer::Kernel, "good").value_or(""), "mine");
  if (geteuid() == 0) { // an entry of another owner in a private directory
    plant(entryPath(Layer::Kernel, "theirs"), Layer::Kernel, "theirs", "planted");
    ASSERT_EQ(::chmod(entryPath(Layer::Kernel, "theirs").c_str(), 0600), 0);
    ASSERT_EQ(::chown(entryPath(Layer::Kernel, "theirs").c_str(), 4242, 4242), 0);
    EXPECT_FALSE(c.get(Layer::Kernel, "theirs"));
  }
}

TEST_F(CacheDir, SymlinkedLayerIsRefusedAndNotListed) {
  fs::path outside = dir.string() + "-elsewhere";
  plant((outside / "victim.tgc").string(), Layer::Kernel, "victim", "not the cache's");
  fs::create_directories(dir);
  ASSERT_EQ(::chmod(dir.c_str(), 0700), 0);
  fs::create_directory_symlink(outside, dir / "kernels");
  EXPECT_NE(checkCacheDirectory(dir.string(), false).find("its layer kernels is a symbolic link"),
            std::string::npos);
  EXPECT_FALSE(ArtifactCache::instance().get(Layer::Kernel, "victim"));
  // list() is what tgc-cache clear removes: nothing outside the cache.
  EXPECT_TRUE(ArtifactCache::list(dir.string()).empty());
  EXPECT_FALSE(ArtifactCache::audit(dir.string()).empty());
  EXPECT_TRUE(fs::exists(outside / "victim.tgc"));
}

TEST_F(CacheDir, SharedCacheIsAnExplicitOptIn) {
  plant(entryPath(Layer::Kernel, "k"), Layer::Kernel, "k", "from a colleague");
  ASSERT_EQ(::chmod(dir.c_str(), 0775), 0);
  ASSERT_EQ(::chmod(entryPath(Layer::Kernel, "k").c_str(), 0664), 0);
  setenv("TGC_CACHE_SHARED", "1", 1);
  std::optional<std::string> got = ArtifactCache::instance().get(Layer::Kernel, "k");
  unsetenv("TGC_CACHE_SHARED");
  EXPECT_EQ(got.value_or(""), "from a colleague");
}

Plan samplePlan() {
  Plan p;
  p.device = "cpu";
  p.values = {{{4, 8}, {8, 1}, DType::Float32}, {{8}, {1}, DType::BFloat16},
              {{4, 8}, {1, 4}, DType::Float32}};
  p.inputs = {0, 1};
  p.outputs = {2};
  KernelStep k;
  k.name = "k0";
  k.inputs = {0, 1};
  k.outputs = {2};
  k.numel = 32;
  k.grid = 7; // a CUDA launch config
  p.kernels.push_back(k);
  ExternStep e;
  e.op = "aten::add";
  e.overload = "Tensor";
  ArgValue t, s;
  t.kind = ArgValue::TensorList;
  t.tensors = {0, -1};
  s.kind = ArgValue::ScalarTensor;
  s.isFloat = true;
  s.d = 0.25;
  e.args = {t, s};
  e.outputs = {2};
  p.externs.push_back(e);
  p.steps = {{Step::Kernel, 0}, {Step::Extern, 0}};
  p.cpuSource = "extern \"C\" void k0(void *const *b) {}";
  p.cudaSources = {"__global__ void k0() {}"};
  return p;
}

TEST(PlanSerialization, RoundTrips) {
  Plan p = samplePlan(), q;
  std::string error;
  ASSERT_TRUE(deserializePlan(serializePlan(p), q, error)) << error;
  EXPECT_EQ(serializePlan(q), serializePlan(p));
  EXPECT_EQ(q.str(), p.str());
  EXPECT_EQ(q.externs[0].args[1].d, 0.25);
  EXPECT_EQ(q.externs[0].args[0].tensors, (std::vector<int>{0, -1}));
  EXPECT_EQ(q.kernels[0].grid, 7);
}

TEST(PlanSerialization, RejectsEveryTruncationAndBadIndices) {
  std::string bytes = serializePlan(samplePlan());
  Plan q;
  std::string error;
  for (size_t n = 0; n < bytes.size(); n += 7)
    EXPECT_FALSE(deserializePlan(bytes.substr(0, n), q, error)) << n;
  Plan bad = samplePlan();
  bad.kernels[0].inputs = {0, 9}; // no value 9
  EXPECT_FALSE(deserializePlan(serializePlan(bad), q, error));
  EXPECT_NE(error.find("out of range"), std::string::npos) << error;
}

} // namespace
} // namespace tgc
