//===- CudaEmulator.cpp - CUDA source to a loaded module; launches --------===//
#include "tests/emu/CudaEmulator.h"
#include "tests/emu/FiberScheduler.h"

#include <xxhash.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <link.h>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#ifndef TGC_EMU_INCLUDE_DIR
#error "TGC_EMU_INCLUDE_DIR must name tests/emu/include"
#endif

namespace tgc::emu {
namespace {

/// The prelude's files: their text is part of every module's cache key.
const char *const kPreludeFiles[] = {"cuda_emu.h",         "cuda_emu_half.h",
                                     "cuda_emu_gpu_numerics.h",
                                     "cuda_emu_math.h",    "cuda_emu_atomics.h",
                                     "tgc_emu_abi.h",      "cuda_fp16.h",
                                     "cuda_bf16.h",        "cuda_runtime.h",
                                     "cuda_runtime_api.h", "device_launch_parameters.h",
                                     "math_constants.h"};

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string runCommand(const std::string &cmd, int &status) {
  std::string out;
  FILE *p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) {
    status = -1;
    return "cannot run: " + cmd;
  }
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
    out.append(buf.data(), n);
  status = pclose(p);
  return out;
}

std::string compilerVersion() {
  static const std::string version = [] {
    int status = 0;
    std::string out = runCommand(
        emulatorCompileCommand().substr(0, emulatorCompileCommand().find(' ')) + " --version",
        status);
    return out.substr(0, out.find('\n'));
  }();
  return version;
}

std::string cacheDirectory() {
  std::string base;
  if (const char *d = std::getenv("TGC_CACHE_DIR"); d && *d)
    base = d;
  else if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
    base = std::string(x) + "/tgc";
  else if (const char *h = std::getenv("HOME"); h && *h)
    base = std::string(h) + "/.cache/tgc";
  else
    base = "/tmp/tgc-" + std::to_string(getuid());
  // mkdir -p, one level at a time.
  std::string dir = base + "/emu";
  for (size_t i = 1; i <= dir.size(); ++i)
    if (i == dir.size() || dir[i] == '/')
      ::mkdir(dir.substr(0, i).c_str(), 0755);
  if (::access(dir.c_str(), W_OK) != 0) {
    dir = "/tmp/tgc-emu-" + std::to_string(getuid());
    ::mkdir(dir.c_str(), 0700);
  }
  return dir;
}

/// The source with comments and string/char literals blanked to spaces, same
/// length, so searches see only code and offsets map back unchanged.
std::string codeOnly(const std::string &s) {
  std::string out = s;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 2, "//") == 0) {
      while (i < s.size() && s[i] != '\n')
        out[i++] = ' ';
    } else if (s.compare(i, 2, "/*") == 0) {
      size_t end = s.find("*/", i + 2);
      end = end == std::string::npos ? s.size() : end + 2;
      for (; i < end; ++i)
        if (s[i] != '\n')
          out[i] = ' ';
      --i;
    } else if (s[i] == '"' || s[i] == '\'') {
      char q = s[i];
      for (++i; i < s.size() && s[i] != q; ++i) {
        if (s[i] == '\\')
          out[i++] = ' ';
        out[i] = ' ';
      }
    }
  }
  return out;
}

bool isIdent(char c) { return std::isalnum((unsigned char)c) || c == '_'; }

/// The name declared by the `__global__` at `pos`: the last identifier before
/// the parameter list, skipping __launch_bounds__(...) and attributes.
std::string kernelNameAfter(const std::string &code, size_t pos, unsigned &maxThreads) {
  std::string last;
  maxThreads = 1024;
  for (size_t i = pos; i < code.size();) {
    char c = code[i];
    if (isIdent(c)) {
      size_t j = i;
      while (j < code.size() && isIdent(code[j]))
        ++j;
      last = code.substr(i, j - i);
      i = j;
      if (last == "__launch_bounds__" || last == "__attribute__" || last == "__align__") {
        while (i < code.size() && std::isspace((unsigned char)code[i]))
          ++i;
        if (last == "__launch_bounds__") {
          // The first argument, when it is a literal: maxThreadsPerBlock.
          size_t b = i + 1, e = code.find_first_of(",)", b);
          std::string arg = code.substr(b, e == std::string::npos ? 0 : e - b);
          arg.erase(std::remove_if(arg.begin(), arg.end(), ::isspace), arg.end());
          if (!arg.empty() && arg.size() < 6 &&
              std::all_of(arg.begin(), arg.end(), [](char c) { return std::isdigit(c); }))
            maxThreads = (unsigned)std::stoul(arg);
        }
        int depth = 0;
        do {
          if (code[i] == '(')
            ++depth;
          else if (code[i] == ')')
            --depth;
          ++i;
        } while (i < code.size() && depth > 0);
        last.clear();
      }
    } else if (c == '(') {
      return last;
    } else if (c == ';' || c == '{') {
      return "";
    } else {
      ++i;
    }
  }
  return "";
}

/// Whether `pos` lies inside a function body: some enclosing '{' follows ')'.
bool insideFunction(const std::string &code, size_t pos) {
  std::vector<bool> stack;
  for (size_t i = 0; i < pos; ++i) {
    if (code[i] == '{') {
      size_t j = i;
      while (j > 0 && std::isspace((unsigned char)code[j - 1]))
        --j;
      stack.push_back(j > 0 && code[j - 1] == ')');
    } else if (code[i] == '}' && !stack.empty()) {
      stack.pop_back();
    }
  }
  for (bool f : stack)
    if (f)
      return true;
  return false;
}

std::string withoutAlignment(std::string type) {
  static const std::regex attr(R"((__align__|alignas)\s*\([^)]*\)|__attribute__\s*\(\(.*?\)\))");
  type = std::regex_replace(type, attr, " ");
  size_t b = type.find_first_not_of(" \t\n"), e = type.find_last_not_of(" \t\n");
  return b == std::string::npos ? "" : type.substr(b, e - b + 1);
}

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Module>> modules; ///< by cache key
};
Registry &registry() {
  static Registry *r = new Registry; // modules stay loaded for the process
  return *r;
}

unsigned defaultWorkers() {
  if (const char *e = std::getenv("TGC_EMU_THREADS"); e && std::atoi(e) > 0)
    return (unsigned)std::atoi(e);
  return std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
}

size_t defaultStackBytes() {
  if (const char *e = std::getenv("TGC_EMU_STACK_KB"); e && std::atoi(e) > 0)
    return (size_t)std::atoi(e) * 1024;
  return 64 * 1024;
}

int scheduleOrder(LaunchConfig::Schedule s) {
  if (s == LaunchConfig::Schedule::Default) {
    const char *e = std::getenv("TGC_EMU_SCHEDULE");
    std::string v = e ? e : "";
    if (v.empty() || v == "forward")
      return 0;
    if (v == "reverse")
      return 1;
    if (v == "shuffled")
      return 2;
    if (v == "straggler")
      return 3;
    throw EmuError("TGC_EMU_SCHEDULE=" + v +
                   " is not one of forward, reverse, shuffled, straggler");
  }
  return s == LaunchConfig::Schedule::Reverse    ? 1
         : s == LaunchConfig::Schedule::Shuffled  ? 2
         : s == LaunchConfig::Schedule::Straggler ? 3
                                                  : 0;
}

} // namespace

std::string emulatorIncludeDir() { return TGC_EMU_INCLUDE_DIR; }

/// TGC_EMU_NUMERICS: "exact" (default) or "gpu": fused multiply-adds
/// contracted as NVRTC does and math functions off by a few ulps
/// (include/cuda_emu_gpu_numerics.h).
static std::string numericsFlags() {
  const char *env = std::getenv("TGC_EMU_NUMERICS");
  std::string v = env ? env : "";
  if (v.empty() || v == "exact")
    return "";
  if (v != "gpu")
    throw EmuError("TGC_EMU_NUMERICS=" + v + " is not one of exact, gpu");
  if (!__builtin_cpu_supports("fma"))
    throw EmuError("TGC_EMU_NUMERICS=gpu needs a CPU with FMA instructions");
  return " -mfma -ffp-contract=fast -DTGC_EMU_GPU_NUMERICS";
}

std::string emulatorCompileCommand() {
  const char *cxx = std::getenv("TGC_CXX");
  // TGC_EMU_CXXFLAGS adds flags, e.g. "-O0 -g" to step through a kernel.
  const char *extra = std::getenv("TGC_EMU_CXXFLAGS");
  return std::string(cxx && *cxx ? cxx : "c++") +
         " -std=c++17 -O2 -fPIC -shared -w -fno-strict-aliasing -fstack-clash-protection -x c++ "
         "-I" +
         emulatorIncludeDir() + " -include cuda_emu.h" + numericsFlags() +
         (extra && *extra ? " " : "") + (extra ? extra : "");
}

namespace {

/// Block-scope `extern __shared__ T name[];` -> a pointer to the block's
/// dynamic shared memory, on the same line (line numbers stay right).
std::string rewriteExternShared(const std::string &source) {
  std::string code = codeOnly(source);
  static const std::regex externShared(
      R"(extern\s+__shared__\s+([^;\[\]\{\}]*?)\s*\b([A-Za-z_]\w*)\s*\[\s*\]\s*;)");
  std::string out;
  size_t copied = 0;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), externShared);
       it != std::sregex_iterator(); ++it) {
    const std::smatch &m = *it;
    size_t pos = (size_t)m.position(0);
    if (!insideFunction(code, pos))
      throw EmuError("the CUDA emulator supports `extern __shared__` only inside a function "
                     "body; found one at namespace scope: " +
                     m.str(0));
    std::string type = withoutAlignment(m.str(1)), name = m.str(2);
    out += source.substr(copied, pos - copied);
    out +=
        type + " *const " + name + " = reinterpret_cast<" + type + " *>(tgc_emu_dynamic_shared());";
    copied = pos + m.length(0);
  }
  return out + source.substr(copied);
}

/// The non-template `__global__` functions of `source`, in order, with the
/// first argument of their __launch_bounds__ (1024 without one).
void findKernels(const std::string &source, std::vector<std::string> &kernels,
                 std::vector<unsigned> &maxThreads) {
  std::string code = codeOnly(source);
  for (size_t pos = code.find("__global__"); pos != std::string::npos;
       pos = code.find("__global__", pos + 10)) {
    if ((pos > 0 && isIdent(code[pos - 1])) || (pos + 10 < code.size() && isIdent(code[pos + 10])))
      continue;
    // Templates have no single address to take; leave them out.
    size_t stmt = code.find_last_of(";}", pos);
    stmt = stmt == std::string::npos ? 0 : stmt;
    if (code.substr(stmt, pos - stmt).find("template") != std::string::npos)
      continue;
    unsigned bound = 1024;
    std::string name = kernelNameAfter(code, pos + 10, bound);
    if (!name.empty() && std::find(kernels.begin(), kernels.end(), name) == kernels.end()) {
      kernels.push_back(name);
      maxThreads.push_back(bound);
    }
  }
}

/// Per kernel: an entry point taking cuLaunchKernel-style void** arguments,
/// and the sizes of its parameters.
std::string entryPoints(const std::vector<std::string> &kernels) {
  std::string out = "\n#line 1 \"tgc-emu-entry-points\"\n";
  for (const std::string &k : kernels)
    out += "extern \"C\" __attribute__((visibility(\"default\"))) void tgc_emu_entry_" + k +
           "(void **args) { ::tgc_emu_detail::invoke(&" + k + ", args); }\n" +
           "extern \"C\" __attribute__((visibility(\"default\"))) int tgc_emu_params_" + k +
           "(const unsigned **sizes) { return ::tgc_emu_detail::parameterSizes(&" + k +
           ", sizes); }\n";
  return out;
}

} // namespace

std::string emulatedSource(const std::string &cudaSource, std::vector<std::string> &kernels,
                           std::vector<unsigned> *maxThreads) {
  std::string out = rewriteExternShared(cudaSource);
  std::vector<unsigned> bounds;
  kernels.clear();
  findKernels(out, kernels, bounds);
  if (maxThreads)
    *maxThreads = bounds;
  return out + entryPoints(kernels);
}

std::shared_ptr<Module> Module::compile(const std::string &cudaSource) {
  std::vector<std::string> kernels;
  std::vector<unsigned> maxThreads;
  std::string source = emulatedSource(cudaSource, kernels, &maxThreads);
  std::string command = emulatorCompileCommand();
  std::string keyText = command + "\n" + compilerVersion() + "\n";
  for (const char *f : kPreludeFiles)
    keyText += readFile(emulatorIncludeDir() + "/" + f) + "\n";
  keyText += source;
  char key[17];
  std::snprintf(key, sizeof key, "%016llx",
                (unsigned long long)XXH3_64bits(keyText.data(), keyText.size()));

  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  if (auto it = reg.modules.find(key); it != reg.modules.end())
    return it->second;

  std::string dir = cacheDirectory(), path = dir + "/" + key + ".so";
  std::shared_ptr<Module> m(new Module());
  m->kernels_ = kernels;
  m->maxThreads_ = maxThreads;
  m->fromCache_ = ::access(path.c_str(), R_OK) == 0;
  if (!m->fromCache_) {
    // Compile beside the cache entry, then publish it with an atomic rename.
    static std::atomic<unsigned> counter{0};
    std::string stem =
        dir + "/build-" + key + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
    std::string src = stem + ".cu", so = stem + ".so";
    std::ofstream(src, std::ios::binary) << source;
    int status = 0;
    std::string output = runCommand(command + " " + src + " -o " + so, status);
    if (status != 0)
      throw EmuError("the host compiler rejected the emulated CUDA source (kept at " + src +
                     "; command: " + command + "):\n" + output);
    ::unlink(src.c_str());
    if (std::rename(so.c_str(), path.c_str()) != 0)
      throw EmuError("cannot move " + so + " to " + path + ": " + std::strerror(errno));
  }
  m->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!m->handle_) {
    const char *e = dlerror();
    ::unlink(path.c_str()); // a damaged entry: the next run rebuilds it
    throw EmuError("cannot load the emulated module " + path + ": " + (e ? e : "?"));
  }
  m->findStaticShared();
  reg.modules.emplace(key, m);
  return m;
}

void Module::findStaticShared() {
  // Static __shared__ is thread_local (the prelude): the zero-initialized
  // part (.tbss) of the module's TLS segment, after any initialized part.
  struct link_map *map = nullptr;
  if (dlinfo(handle_, RTLD_DI_LINKMAP, &map) != 0 || !map)
    return;
  struct Find {
    ElfW(Addr) base;
    size_t offset = 0, bytes = 0;
  } find{map->l_addr};
  dl_iterate_phdr(
      [](struct dl_phdr_info *info, size_t, void *data) {
        auto *f = static_cast<Find *>(data);
        if (info->dlpi_addr != f->base)
          return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i)
          if (info->dlpi_phdr[i].p_type == PT_TLS) {
            f->offset = info->dlpi_phdr[i].p_filesz;
            f->bytes = info->dlpi_phdr[i].p_memsz - info->dlpi_phdr[i].p_filesz;
          }
        return 1;
      },
      &find);
  staticSharedOffset_ = find.offset;
  staticSharedBytes_ = find.bytes;
}

GuardedBuffers::GuardedBuffers(const std::vector<void *> &buffers,
                               const std::vector<size_t> &bytes)
    : original_(buffers), bytes_(bytes) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  for (size_t i = 0; i < buffers.size(); ++i) {
    const size_t padded = (bytes[i] + 15) / 16 * 16;
    const size_t body = (padded + page - 1) / page * page;
    void *map = mmap(nullptr, body + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (map == MAP_FAILED)
      throw EmuError("cannot map a guarded buffer of " + std::to_string(bytes[i]) + " bytes");
    maps_.push_back(map);
    mapBytes_.push_back(body + page);
    mprotect(static_cast<char *>(map) + body, page, PROT_NONE);
    char *start = static_cast<char *>(map) + body - padded;
    if (bytes[i])
      std::memcpy(start, buffers[i], bytes[i]);
    guarded_.push_back(start);
  }
}

GuardedBuffers::~GuardedBuffers() {
  for (size_t i = 0; i < maps_.size(); ++i)
    munmap(maps_[i], mapBytes_[i]);
}

void GuardedBuffers::copyBack(size_t i) const {
  if (bytes_[i])
    std::memcpy(original_[i], guarded_[i], bytes_[i]);
}

Module::~Module() {
  // Not dlclose'd: worker threads may still hold thread-local storage of it.
}

int Module::parameterSizes(const std::string &kernel, const unsigned **sizes) const {
  auto fn = reinterpret_cast<int (*)(const unsigned **)>(
      dlsym(handle_, ("tgc_emu_params_" + kernel).c_str()));
  if (!fn)
    throw EmuError(unknownKernel(kernel));
  return fn(sizes);
}

std::string Module::unknownKernel(const std::string &kernel) const {
  std::string names;
  for (const std::string &k : kernels_)
    names += (names.empty() ? "" : ", ") + k;
  return "no __global__ function '" + kernel +
         "' in the emulated source (it has: " + (names.empty() ? "none" : names) + ")";
}

void Module::launch(const std::string &kernel, const LaunchConfig &config, void **args,
                    size_t argCount) const {
  const unsigned *sizes = nullptr;
  const int params = parameterSizes(kernel, &sizes);
  if ((size_t)params != argCount)
    throw EmuError("invalid launch of " + kernel + ": it takes " + std::to_string(params) +
                   " parameters, the launch passes " + std::to_string(argCount) + " arguments");
  detail::GridLaunch l;
  l.kernel = kernel;
  l.entry =
      reinterpret_cast<void (*)(void **)>(dlsym(handle_, ("tgc_emu_entry_" + kernel).c_str()));
  if (!l.entry)
    throw EmuError(unknownKernel(kernel));
  l.currentSlot = reinterpret_cast<tgc_emu_thread **(*)()>(dlsym(handle_, "tgc_emu_current_slot"));
  l.args = args;
  l.grid = {config.grid.x, config.grid.y, config.grid.z};
  l.block = {config.block.x, config.block.y, config.block.z};
  uint64_t threads = (uint64_t)l.block.x * l.block.y * l.block.z;
  if (!l.grid.x || !l.grid.y || !l.grid.z || !threads || threads > 1024 || l.block.z > 64 ||
      l.grid.y > 65535 || l.grid.z > 65535)
    throw EmuError("invalid launch of " + kernel + ": grid (" + std::to_string(l.grid.x) + "," +
                   std::to_string(l.grid.y) + "," + std::to_string(l.grid.z) + "), block (" +
                   std::to_string(l.block.x) + "," + std::to_string(l.block.y) + "," +
                   std::to_string(l.block.z) + ") (CUDA allows 1..1024 threads a block, " +
                   "block z <= 64, grid y and z <= 65535)");
  if (config.dynamicSharedBytes > 227 * 1024)
    throw EmuError("invalid launch of " + kernel + ": " +
                   std::to_string(config.dynamicSharedBytes) +
                   " bytes of dynamic shared memory (sm_90 allows 227 KiB a block)");
  auto k = std::find(kernels_.begin(), kernels_.end(), kernel);
  if (k != kernels_.end() && threads > maxThreads_[k - kernels_.begin()])
    throw EmuError("invalid launch of " + kernel + ": " + std::to_string(threads) +
                   " threads a block, but its __launch_bounds__ allows " +
                   std::to_string(maxThreads_[k - kernels_.begin()]) +
                   " (a GPU refuses this launch)");
  l.dynamicSharedBytes = config.dynamicSharedBytes;
  l.workers = config.workers ? config.workers : defaultWorkers();
  l.stackBytes = config.stackBytes ? config.stackBytes : defaultStackBytes();
  l.order = scheduleOrder(config.schedule);
  if (staticSharedBytes_) {
    void *handle = handle_;
    l.staticShared = [handle]() -> void * {
      void *block = nullptr;
      return dlinfo(handle, RTLD_DI_TLS_DATA, &block) == 0 ? block : nullptr;
    };
    l.staticSharedOffset = staticSharedOffset_;
    l.staticSharedBytes = staticSharedBytes_;
  }
  detail::runGrid(l);
}

} // namespace tgc::emu
