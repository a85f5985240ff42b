//===- Nvrtc.cpp - NVRTC driver (dlopen'ed, so CPU-only use needs no CUDA) -===//
#include "runtime/Nvrtc.h"

#include "runtime/ArtifactCache.h"
#include "runtime/FaultInjection.h"
#include "runtime/Log.h"

#include <nvrtc.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <mutex>
#include <regex>
#include <thread>

namespace tgc {

namespace {

/// The NVRTC entry points tgc uses.
#define TGC_NVRTC_FUNCTIONS(X)                                                 \
  X(nvrtcVersion) X(nvrtcCreateProgram) X(nvrtcCompileProgram)                 \
  X(nvrtcDestroyProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog)       \
  X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcGetPTXSize) X(nvrtcGetPTX)      \
  X(nvrtcGetErrorString) X(nvrtcGetNumSupportedArchs) X(nvrtcGetSupportedArchs)

/// The NVRTC entry points, resolved once.
struct NvrtcApi {
  void *handle = nullptr;
  std::string why;
#define TGC_NVRTC_FN(name) decltype(&::name) name = nullptr;
  TGC_NVRTC_FUNCTIONS(TGC_NVRTC_FN)
#undef TGC_NVRTC_FN
};

const NvrtcApi &api() {
  static const NvrtcApi a = [] {
    NvrtcApi a;
    std::vector<std::string> candidates;
    if (const char *env = std::getenv("TGC_NVRTC_LIBRARY"))
      candidates.push_back(env);
    candidates.push_back("libnvrtc.so.13");
    candidates.push_back("/usr/local/cuda/lib64/libnvrtc.so.13");
    candidates.push_back("/usr/local/cuda/lib64/libnvrtc.so");
    for (const std::string &c : candidates)
      if ((a.handle = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)))
        break;
    if (!a.handle) {
      a.why = "libnvrtc not found (tried TGC_NVRTC_LIBRARY, libnvrtc.so.13, "
              "/usr/local/cuda/lib64)";
      return a;
    }
#define TGC_NVRTC_FN(name)                                                     \
  a.name = reinterpret_cast<decltype(&::name)>(dlsym(a.handle, #name));        \
  if (!a.name) {                                                               \
    a.why = "libnvrtc lacks " #name;                                           \
    a.handle = nullptr;                                                        \
    return a;                                                                  \
  }
    TGC_NVRTC_FUNCTIONS(TGC_NVRTC_FN)
#undef TGC_NVRTC_FN
    return a;
  }();
  return a;
}

/// TGC_LOG=kernels: ptxas's register and spill report (-Xptxas=-v) of each
/// compiled kernel; spills get their own line, since they cost bandwidth.
void logSpills(const std::string &name, const std::string &arch, const NvrtcResult &r) {
  if (!logEnabled("kernels"))
    return;
  KernelResources k = kernelResources(r, name);
  std::string line = "compiled " + name + " for " + arch;
  if (k.reported)
    line += ": " + std::to_string(k.registers) + " registers";
  log("kernels", line);
  if (k.spillStoreBytes || k.spillLoadBytes)
    log("kernels", name + " spills registers: " + std::to_string(k.spillStoreBytes) +
                        " bytes stored, " + std::to_string(k.spillLoadBytes) + " bytes loaded (" +
                        arch + ")");
}

} // namespace

bool nvrtcAvailable(std::string *why) {
  if (why)
    *why = api().why;
  return api().handle != nullptr;
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  if (!nvrtcAvailable() || api().nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return "unavailable";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<std::string> nvrtcOptions(const std::string &arch) {
  std::vector<std::string> opts = {"-std=c++17", "--gpu-architecture=" + arch,
                                   "-lineinfo", "-Xptxas=-v"};
  const char *home = std::getenv("CUDA_HOME");
  std::string include = std::string(home && *home ? home : "/usr/local/cuda") + "/include";
  if (std::filesystem::exists(include + "/cuda_fp16.h"))
    opts.push_back("--include-path=" + include);
  return opts;
}

KeyInputs cudaKernelKey(const std::string &source, const std::string &arch) {
  KeyInputs k = baseKeyInputs();
  k.content = source;
  k.toolchain = "nvrtc " + nvrtcVersion() + " payload 2";
  for (const std::string &o : nvrtcOptions(arch))
    k.toolchain += " " + o;
  k.arch = arch;
  return k;
}

NvrtcResult compileCuda(const std::string &source, const std::string &name,
                        const std::string &arch, bool useCache) {
  NvrtcResult r;
  std::string key = buildKey(cudaKernelKey(source, arch));
  ArtifactCache &cache = ArtifactCache::current();
  if (std::optional<std::string> entry = useCache ? cache.get(Layer::Kernel, key) : std::nullopt) {
    // Payload ("payload 2" in the key): cubin size, cubin, PTX size, PTX, log.
    uint64_t n = 0, p = 0;
    if (entry->size() >= 16) {
      std::memcpy(&n, entry->data(), 8);
      if (n <= entry->size() - 16) {
        std::memcpy(&p, entry->data() + 8 + n, 8);
        if (p <= entry->size() - 16 - n) {
          r.cubin = entry->substr(8, n);
          r.ptx = entry->substr(16 + n, p);
          r.log = entry->substr(16 + n + p);
          r.ok = true;
          r.fromCache = true;
          return r;
        }
      }
    }
  }
  r = compileCudaUncached(source, name, arch);
  if (r.ok) {
    uint64_t n = r.cubin.size(), p = r.ptx.size();
    std::string payload(reinterpret_cast<const char *>(&n), 8);
    payload += r.cubin;
    payload.append(reinterpret_cast<const char *>(&p), 8);
    cache.put(Layer::Kernel, key, payload + r.ptx + r.log);
  }
  return r;
}

KernelResources kernelResources(const NvrtcResult &r, const std::string &name) {
  KernelResources k;
  // ptxas: "Compiling entry function 'name' for 'sm_90'", then "Function
  // properties for name" / "N bytes stack frame, N bytes spill stores, N
  // bytes spill loads", and "Used N registers, ..., N bytes smem, ...".
  size_t at = r.log.find("Compiling entry function '" + name + "'");
  if (at != std::string::npos) {
    size_t end = r.log.find("Compiling entry function", at + 1);
    std::string section = r.log.substr(at, end == std::string::npos ? std::string::npos : end - at);
    std::smatch m;
    static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
    static const std::regex regs(R"(Used (\d+) registers)");
    static const std::regex smem(R"((\d+) bytes smem)");
    size_t props = section.find("Function properties for " + name + "\n");
    std::string own = props == std::string::npos ? section : section.substr(props);
    if (std::regex_search(own, m, frame)) {
      k.stackBytes = std::stoll(m[1]);
      k.spillStoreBytes = std::stoll(m[2]);
      k.spillLoadBytes = std::stoll(m[3]);
    }
    if (std::regex_search(section, m, regs)) {
      k.reported = true;
      k.registers = std::stoi(m[1]);
      if (std::regex_search(section, m, smem))
        k.sharedBytes = std::stoll(m[1]);
    }
  }
  // PTX: ".entry name(\n .param ...,\n ...\n)\n.maxntid 256, 1, 1".
  size_t entry = r.ptx.find(".entry " + name + "(");
  if (entry != std::string::npos) {
    size_t close = r.ptx.find(')', entry);
    k.params = 0;
    for (size_t p = r.ptx.find(".param", entry); p < close; p = r.ptx.find(".param", p + 1))
      k.params++;
    size_t body = r.ptx.find('{', close);
    size_t maxntid = r.ptx.find(".maxntid", close);
    if (maxntid < body) {
      int x = 1, y = 1, z = 1;
      std::sscanf(r.ptx.c_str() + maxntid, ".maxntid %d, %d, %d", &x, &y, &z);
      k.maxThreads = x * y * z;
    }
  }
  return k;
}

NvrtcResult compileCudaUncached(const std::string &source, const std::string &name,
                                const std::string &arch) {
  NvrtcResult r;
  if (faultInjected(FaultStage::Nvrtc)) {
    r.error = "NVRTC failed to compile kernel " + name + ": " +
              injectedFaultMessage(FaultStage::Nvrtc);
    return r;
  }
  const NvrtcApi &a = api();
  if (!a.handle) {
    r.error = a.why;
    return r;
  }
  nvrtcProgram prog;
  nvrtcResult rc = a.nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(),
                                        0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS) {
    r.error = std::string("nvrtcCreateProgram: ") + a.nvrtcGetErrorString(rc);
    return r;
  }
  std::vector<std::string> opts = nvrtcOptions(arch);
  std::vector<const char *> cOpts;
  for (const std::string &o : opts)
    cOpts.push_back(o.c_str());
  rc = a.nvrtcCompileProgram(prog, cOpts.size(), cOpts.data());
  size_t logSize = 0;
  a.nvrtcGetProgramLogSize(prog, &logSize);
  r.log.resize(logSize);
  if (logSize)
    a.nvrtcGetProgramLog(prog, r.log.data());
  if (rc != NVRTC_SUCCESS) {
    std::string saved = ArtifactCache::current().dir() + "/failed/" + name + "." +
                        contentHash(source) + ".cu";
    writeFileAtomic(saved, source);
    r.error = "NVRTC failed to compile kernel " + name + " for " + arch +
              " (source saved to " + saved + "):\n" + r.log;
    a.nvrtcDestroyProgram(&prog);
    return r;
  }
  logSpills(name, arch, r);
  size_t size = 0;
  if (a.nvrtcGetCUBINSize(prog, &size) == NVRTC_SUCCESS && size) {
    r.cubin.resize(size);
    a.nvrtcGetCUBIN(prog, r.cubin.data());
  }
  if (a.nvrtcGetPTXSize(prog, &size) == NVRTC_SUCCESS && size) {
    r.ptx.resize(size);
    a.nvrtcGetPTX(prog, r.ptx.data());
  }
  a.nvrtcDestroyProgram(&prog);
  r.ok = true;
  return r;
}

std::string nvrtcTargetFor(const std::string &smArch) {
  const NvrtcApi &a = api();
  int want = std::atoi(smArch.c_str() + (smArch.rfind("sm_", 0) == 0 ? 3 : 0));
  int count = 0, best = 0;
  if (a.handle && a.nvrtcGetNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0) {
    std::vector<int> archs(count);
    a.nvrtcGetSupportedArchs(archs.data());
    for (int x : archs) {
      if (x == want)
        return "sm_" + std::to_string(x);
      if (x < want)
        best = std::max(best, x);
    }
  }
  // A device newer than this NVRTC: PTX for the newest architecture it
  // knows, which the driver compiles for the device when loading it.
  return best ? "compute_" + std::to_string(best) : smArch;
}

std::vector<NvrtcResult> compileCudaAll(const std::vector<std::string> &sources,
                                        const std::vector<std::string> &names,
                                        const std::string &arch, unsigned threads,
                                        bool useCache) {
  std::vector<NvrtcResult> results(sources.size());
  if (threads == 0)
    threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  ArtifactCache &cache = ArtifactCache::current(); // the workers use the caller's cache
  auto work = [&] {
    CacheScope scope(cache);
    for (size_t i; (i = next++) < sources.size();)
      results[i] = compileCuda(sources[i], names[i], arch, useCache);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < std::min<size_t>(threads, sources.size()); ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  return results;
}

} // namespace tgc
