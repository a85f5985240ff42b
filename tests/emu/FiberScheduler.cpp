//===- FiberScheduler.cpp - CUDA blocks as fibers: barriers, warps, deadlocks ===//
//
// A BlockRunner owns one fiber per CUDA thread of a block and lives on one OS
// thread for a whole launch; it runs that thread's blocks one after another.
// Fibers are reused from block to block (each loops: run the kernel, park as
// exited), so a launch creates blockDim fibers per worker, not per block.
//
// Scheduling is cooperative and deterministic: the runner resumes ready
// fibers in thread order (or reversed, or a fixed shuffle, or shuffled with
// random warps held back as stragglers, to expose races);
// a fiber runs until it reaches a barrier or a warp operation. The last
// arrival completes the barrier (marks the others ready) and carries on; the
// others continue on the runner's next pass. A pass that
// finds nothing ready while threads are still unfinished is a deadlock,
// reported with who waits where.
#include "tests/emu/FiberScheduler.h"
#include "tests/emu/CudaEmulator.h"

#include <boost/context/fiber.hpp>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace ctx = boost::context;

namespace tgc::emu::detail {
namespace {

/// Hands each fiber its slice of a StackArena, which outlives the fiber.
struct SliceStack {
  void *top;
  size_t size;
  ctx::stack_context allocate() {
    ctx::stack_context sc;
    sc.size = size;
    sc.sp = top;
    return sc;
  }
  void deallocate(ctx::stack_context &) {}
};

/// Fiber stacks for up to `count` threads in one mapping, a guard page below
/// each stack (an overflow faults instead of writing into the neighbour's).
/// Arenas are kept for later launches: mapping, protecting and first-touching
/// stacks is most of the cost of a small launch.
struct StackArena {
  void *base = nullptr;
  size_t stackBytes = 0, bytes = 0;
  unsigned count = 0;
  char *top(unsigned i) const {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return static_cast<char *>(base) + (size_t)(i + 1) * (stackBytes + page);
  }

  static StackArena acquire(unsigned count, size_t stackBytes) {
    {
      std::lock_guard<std::mutex> lock(poolMutex());
      std::vector<StackArena> &pool = freeArenas();
      for (size_t i = 0; i < pool.size(); ++i)
        if (pool[i].stackBytes == stackBytes && pool[i].count >= count) {
          StackArena a = pool[i];
          pool.erase(pool.begin() + i);
          return a;
        }
    }
    StackArena a;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    a.stackBytes = stackBytes;
    a.count = count;
    a.bytes = (stackBytes + page) * count;
    a.base = mmap(nullptr, a.bytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a.base == MAP_FAILED)
      throw EmuError("cannot map " + std::to_string(a.bytes >> 20) + " MiB of fiber stacks");
    for (unsigned i = 0; i < count; ++i)
      mprotect(static_cast<char *>(a.base) + (size_t)i * (stackBytes + page), page, PROT_NONE);
    return a;
  }

  static void release(StackArena a) {
    std::lock_guard<std::mutex> lock(poolMutex());
    std::vector<StackArena> &pool = freeArenas();
    pool.push_back(a);
    if (pool.size() > 16) { // keep the pool small: drop the oldest
      munmap(pool.front().base, pool.front().bytes);
      pool.erase(pool.begin());
    }
  }

private:
  static std::mutex &poolMutex() {
    static std::mutex *m = new std::mutex;
    return *m;
  }
  static std::vector<StackArena> &freeArenas() {
    static auto *v = new std::vector<StackArena>;
    return *v;
  }
};

std::string hex(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

class BlockRunner {
public:
  BlockRunner(const GridLaunch &launch);
  ~BlockRunner();
  /// Runs one block to completion; returns an error message, or "".
  std::string run(tgc_emu_uint3 blockIdx);

  // Entry points of the hooks, on the running fiber.
  int blockBarrier(int op, int predicate);
  unsigned long long warpOp(unsigned mask, int op, unsigned long long value, int src);
  [[noreturn]] void trap(const std::string &message);

  static thread_local BlockRunner *current;
  static thread_local unsigned currentThread;

private:
  enum class State : uint8_t { Ready, AtBarrier, AtWarpOp, Exited, Trapped };
  struct Thread {
    ctx::fiber fiber; ///< the suspended fiber (empty while it runs)
    ctx::fiber main;  ///< the runner, while the fiber runs
    tgc_emu_thread view;
    State state = State::Ready;
  };
  struct Warp {
    unsigned existing = 0, arrived = 0;
    unsigned mask[32];
    int op[32], src[32];
    unsigned long long value[32], result[32];
  };

  void setOrder(tgc_emu_uint3 blockIdx);
  void holdStragglers();
  void poisonStaticShared();
  void resume(unsigned i);
  void yield(unsigned i);
  void completeWarpOp(Warp &w, unsigned eff, int op);
  std::string threadName(unsigned i) const;
  std::string deadlockMessage() const;

public:
  /// For the fault handler: which kernel, block and thread faulted, and
  /// whether the address is just below that thread's stack (an overflow).
  void describeFault(int sig, const void *addr, char *buf, size_t size) const;

private:
  const GridLaunch &launch_;
  unsigned n_;
  std::vector<Thread> threads_;
  std::vector<Warp> warps_;
  std::vector<unsigned> order_; ///< the order of a pass over the threads
  std::vector<char> held_;      ///< straggler schedule: warps held back, per warp
  unsigned heldCount_ = 0;
  std::mt19937 stragglerRng_;
  unsigned char *staticShared_ = nullptr; ///< this OS thread's static __shared__ (the module's TLS)
  size_t staticSharedBytes_ = 0;
  std::vector<unsigned char> dynamicShared_;
  tgc_emu_thread **slot_;
  tgc_emu_uint3 blockIdx_{0, 0, 0};
  unsigned exited_ = 0, arrived_ = 0;
  int reduceCount_ = 0, reduceAnd_ = 1, reduceOr_ = 0, reduceResult_ = 0;
  bool quit_ = false;
  std::string trapMessage_;
  StackArena stacks_;
};

thread_local BlockRunner *BlockRunner::current = nullptr;
thread_local unsigned BlockRunner::currentThread = 0;

void hookSyncthreads() { BlockRunner::current->blockBarrier(-1, 0); }
int hookSyncthreadsReduce(int op, int predicate) {
  return BlockRunner::current->blockBarrier(op, predicate);
}
unsigned long long hookWarp(unsigned mask, int op, unsigned long long value, int src) {
  return BlockRunner::current->warpOp(mask, op, value, src);
}
void hookTrap(const char *message) { BlockRunner::current->trap(message); }
const tgc_emu_hooks kHooks = {hookSyncthreads, hookSyncthreadsReduce, hookWarp, hookTrap};

BlockRunner::BlockRunner(const GridLaunch &launch)
    : launch_(launch), n_(launch.block.x * launch.block.y * launch.block.z), threads_(n_),
      warps_((n_ + 31) / 32), held_(warps_.size(), 0),
      dynamicShared_(launch.dynamicSharedBytes + 16), slot_(launch.currentSlot()) {
  // currentSlot() touched the module's thread-local storage, so this OS
  // thread's block of it exists now; static __shared__ is its zero-initialized part.
  if (launch.staticShared) {
    staticShared_ = static_cast<unsigned char *>(launch.staticShared());
    staticSharedBytes_ = staticShared_ ? launch.staticSharedBytes : 0;
    staticShared_ += staticShared_ ? launch.staticSharedOffset : 0;
  }
  for (unsigned i = 0; i < n_; ++i) {
    tgc_emu_thread &v = threads_[i].view;
    v.thread_idx = {i % launch.block.x, (i / launch.block.x) % launch.block.y,
                    i / (launch.block.x * launch.block.y)};
    v.block_dim = launch.block;
    v.grid_dim = launch.grid;
    // 16-byte aligned, as CUDA guarantees (vector loads from it are common).
    v.dynamic_shared = reinterpret_cast<void *>(
        (reinterpret_cast<uintptr_t>(dynamicShared_.data()) + 15) & ~uintptr_t(15));
    v.hooks = &kHooks;
  }
  for (unsigned w = 0; w < warps_.size(); ++w) {
    unsigned lanes = std::min(32u, n_ - 32 * w);
    warps_[w].existing = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
  }
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  stacks_ = StackArena::acquire(n_, (launch.stackBytes + page - 1) / page * page);
}

BlockRunner::~BlockRunner() {
  // Parked fibers leave their loop and return; fibers stopped inside a kernel
  // (deadlock, trap) are unwound by ~fiber.
  quit_ = true;
  for (unsigned i = 0; i < n_; ++i)
    if (threads_[i].fiber && threads_[i].state == State::Exited)
      resume(i);
  threads_.clear();
  StackArena::release(stacks_);
}

void BlockRunner::resume(unsigned i) {
  Thread &t = threads_[i];
  current = this;
  currentThread = i;
  *slot_ = &t.view;
  if (!t.fiber) {
    t.fiber = ctx::fiber(std::allocator_arg, SliceStack{stacks_.top(i), stacks_.stackBytes},
                         [this, i](ctx::fiber &&main) {
                           Thread &self = threads_[i];
                           self.main = std::move(main);
                           while (!quit_) {
                             launch_.entry(launch_.args);
                             self.state = State::Exited;
                             ++exited_;
                             self.main = std::move(self.main).resume();
                           }
                           return std::move(self.main);
                         });
  }
  t.fiber = std::move(t.fiber).resume();
  current = nullptr; // back on the runner: a fault here is not a kernel's
}

void BlockRunner::yield(unsigned i) {
  Thread &t = threads_[i];
  t.main = std::move(t.main).resume();
}

void BlockRunner::setOrder(tgc_emu_uint3 blockIdx) {
  order_.resize(n_);
  for (unsigned i = 0; i < n_; ++i)
    order_[i] = launch_.order == 1 ? n_ - 1 - i : i;
  const unsigned seed = blockIdx.x * 73856093u ^ blockIdx.y * 19349663u ^ blockIdx.z * 83492791u;
  if (launch_.order == 2 || launch_.order == 3) {
    std::mt19937 gen(seed);
    std::shuffle(order_.begin(), order_.end(), gen);
  }
  stragglerRng_.seed(seed ^ 0x5bd1e995u);
  std::fill(held_.begin(), held_.end(), 0);
  heldCount_ = 0;
}

/// Straggler schedule: about a third of the warps (at least one, never all
/// of a block with several) are held back until no other thread can run, so
/// the rest of the block races ahead through warp operations and code
/// between barriers, the way a descheduled warp lets the others on a GPU.
void BlockRunner::holdStragglers() {
  if (launch_.order != 3 || warps_.size() < 2)
    return;
  heldCount_ = 0;
  for (char &h : held_)
    heldCount_ += (h = stragglerRng_() % 3 == 0);
  if (heldCount_ == 0 || heldCount_ == held_.size()) {
    std::fill(held_.begin(), held_.end(), 0);
    held_[stragglerRng_() % held_.size()] = 1;
    heldCount_ = 1;
  }
}

/// CUDA leaves shared memory undefined at block start; here it would hold
/// zeros, then the previous block's data. 0xff bytes (NaN as float, -1 as
/// int) make a read before the first write show up in the results.
void BlockRunner::poisonStaticShared() {
  if (staticSharedBytes_)
    std::memset(staticShared_, 0xff, staticSharedBytes_);
}

std::string BlockRunner::run(tgc_emu_uint3 blockIdx) {
  blockIdx_ = blockIdx;
  for (Thread &t : threads_) {
    t.view.block_idx = blockIdx;
    t.state = State::Ready;
  }
  // Dynamic shared memory starts as NaNs (0xff bytes): a kernel that reads
  // before it writes shows up in its results.
  // So does static shared memory (this overwrites the module's current-thread
  // pointer too, which resume() sets before every switch).
  std::memset(dynamicShared_.data(), 0xff, dynamicShared_.size());
  poisonStaticShared();
  exited_ = arrived_ = 0;
  reduceCount_ = 0, reduceAnd_ = 1, reduceOr_ = 0;
  for (Warp &w : warps_)
    w.arrived = 0;
  setOrder(blockIdx);
  holdStragglers();
  while (exited_ < n_) {
    bool ran = false;
    for (unsigned i : order_) {
      if (threads_[i].state != State::Ready || (heldCount_ && held_[i / 32]))
        continue;
      ran = true;
      resume(i);
      if (threads_[i].state == State::Trapped)
        return trapMessage_;
    }
    if (!ran && heldCount_) {
      // Everyone else waits or has exited: the stragglers catch up, and the
      // next pass holds back others.
      std::fill(held_.begin(), held_.end(), 0);
      heldCount_ = 0;
      continue;
    }
    if (!ran)
      return deadlockMessage();
    if (!heldCount_)
      holdStragglers();
  }
  return "";
}

int BlockRunner::blockBarrier(int op, int predicate) {
  unsigned i = currentThread;
  reduceCount_ += predicate != 0;
  reduceAnd_ &= predicate != 0;
  reduceOr_ |= predicate != 0;
  if (++arrived_ == n_) {
    // Everyone arrived: publish the reduction, release the waiters, carry on.
    reduceResult_ = op == TGC_EMU_BLOCK_AND  ? reduceAnd_
                    : op == TGC_EMU_BLOCK_OR ? reduceOr_
                                             : reduceCount_;
    reduceCount_ = 0, reduceAnd_ = 1, reduceOr_ = 0;
    arrived_ = 0;
    for (Thread &t : threads_)
      if (t.state == State::AtBarrier)
        t.state = State::Ready;
    // New stragglers right away: the released threads after this one in
    // the current pass would otherwise all run before any is held back.
    holdStragglers();
    return reduceResult_;
  }
  threads_[i].state = State::AtBarrier;
  yield(i);
  return reduceResult_; // not overwritten before this thread reaches the next barrier
}

unsigned long long BlockRunner::warpOp(unsigned mask, int op, unsigned long long value, int src) {
  unsigned i = currentThread, lane = i % 32;
  Warp &w = warps_[i / 32];
  unsigned eff = mask & w.existing;
  if (!(eff >> lane & 1))
    trap(threadName(i) + " calls a warp operation with mask " + hex(mask) +
         ", which does not include its own lane " + std::to_string(lane));
  w.mask[lane] = eff;
  w.op[lane] = op;
  w.value[lane] = value;
  w.src[lane] = src;
  w.arrived |= 1u << lane;
  if ((w.arrived & eff) == eff) {
    completeWarpOp(w, eff, op);
    return w.result[lane];
  }
  threads_[i].state = State::AtWarpOp;
  yield(i);
  return w.result[lane]; // written only when this lane takes part again
}

void BlockRunner::completeWarpOp(Warp &w, unsigned eff, int op) {
  unsigned self = currentThread % 32, warpBase = currentThread / 32 * 32;
  for (unsigned l = 0; l < 32; ++l)
    if ((eff >> l & 1) && (w.mask[l] != eff || w.op[l] != op))
      trap("divergent warp operation in warp " + std::to_string(warpBase / 32) + ": lane " +
           std::to_string(l) + " waits with mask " + hex(w.mask[l]) + " (op " +
           std::to_string(w.op[l]) + ") while lane " + std::to_string(self) +
           " arrives with mask " + hex(eff) + " (op " + std::to_string(op) + ")");
  unsigned long long all = 0;
  switch (op) {
  case TGC_EMU_WARP_BALLOT:
    for (unsigned l = 0; l < 32; ++l)
      if ((eff >> l & 1) && w.value[l])
        all |= 1ull << l;
    break;
  case TGC_EMU_WARP_ADD_U32:
  case TGC_EMU_WARP_AND_U32:
  case TGC_EMU_WARP_OR_U32:
  case TGC_EMU_WARP_XOR_U32:
  case TGC_EMU_WARP_MIN_U32:
  case TGC_EMU_WARP_MAX_U32:
  case TGC_EMU_WARP_MIN_I32:
  case TGC_EMU_WARP_MAX_I32: {
    bool first = true;
    uint32_t acc = 0;
    for (unsigned l = 0; l < 32; ++l) {
      if (!(eff >> l & 1))
        continue;
      uint32_t v = (uint32_t)w.value[l];
      if (first)
        acc = v, first = false;
      else if (op == TGC_EMU_WARP_ADD_U32)
        acc += v;
      else if (op == TGC_EMU_WARP_AND_U32)
        acc &= v;
      else if (op == TGC_EMU_WARP_OR_U32)
        acc |= v;
      else if (op == TGC_EMU_WARP_XOR_U32)
        acc ^= v;
      else if (op == TGC_EMU_WARP_MIN_U32)
        acc = std::min(acc, v);
      else if (op == TGC_EMU_WARP_MAX_U32)
        acc = std::max(acc, v);
      else if (op == TGC_EMU_WARP_MIN_I32)
        acc = (uint32_t)std::min((int32_t)acc, (int32_t)v);
      else
        acc = (uint32_t)std::max((int32_t)acc, (int32_t)v);
    }
    all = acc;
    break;
  }
  default:
    break;
  }
  for (unsigned l = 0; l < 32; ++l) {
    if (!(eff >> l & 1))
      continue;
    if (op == TGC_EMU_WARP_SHUFFLE) {
      int s = w.src[l];
      // A source lane that does not take part: undefined in CUDA; the own value here.
      w.result[l] = (s >= 0 && s < 32 && (eff >> s & 1)) ? w.value[s] : w.value[l];
    } else {
      w.result[l] = all;
    }
    if (l != self)
      threads_[warpBase + l].state = State::Ready;
  }
  w.arrived &= ~eff;
}

void BlockRunner::trap(const std::string &message) {
  unsigned i = currentThread;
  trapMessage_ = "kernel " + launch_.kernel + ", block (" + std::to_string(blockIdx_.x) + "," +
                 std::to_string(blockIdx_.y) + "," + std::to_string(blockIdx_.z) + "), " +
                 threadName(i) + ": " + message;
  threads_[i].state = State::Trapped;
  yield(i); // never resumed: the runner stops and unwinds this fiber
  std::abort();
}

void BlockRunner::describeFault(int sig, const void *addr, char *buf, size_t size) const {
  const tgc_emu_uint3 &t = threads_[currentThread].view.thread_idx;
  const char *lowest = stacks_.top(currentThread) - stacks_.stackBytes;
  const char *a = static_cast<const char *>(addr);
  bool overflow = a < lowest && a >= lowest - (size_t)sysconf(_SC_PAGESIZE) * 16;
  std::snprintf(buf, size,
                "\ntgc CUDA emulator: %s in kernel %s, block (%u,%u,%u), thread (%u,%u,%u), "
                "address %p%s\n",
                overflow        ? "stack overflow"
                : sig == SIGBUS ? "bus error"
                                : "invalid memory access",
                launch_.kernel.c_str(), blockIdx_.x, blockIdx_.y, blockIdx_.z, t.x, t.y, t.z, addr,
                overflow ? " (the thread's emulation stack is full: raise "
                           "LaunchConfig::stackBytes or TGC_EMU_STACK_KB)"
                         : "");
}

// --- faults inside kernels ------------------------------------------------------
// A SIGSEGV or SIGBUS on a fiber is described (kernel, block, thread, stack
// overflow or not) on stderr; then the previous handler is put back and the
// faulting instruction runs again under it, so the process ends as it would
// have (a crash is still a crash; this only says where).
struct sigaction previousSegv, previousBus;

void onFault(int sig, siginfo_t *info, void *) {
  if (const BlockRunner *r = BlockRunner::current) {
    char buf[512];
    r->describeFault(sig, info->si_addr, buf, sizeof buf);
    ssize_t ignored = ::write(2, buf, std::strlen(buf));
    (void)ignored;
  }
  sigaction(sig, sig == SIGSEGV ? &previousSegv : &previousBus, nullptr);
}

void installFaultHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = onFault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &previousSegv);
    sigaction(SIGBUS, &sa, &previousBus);
  });
}

/// The handler runs on this stack: a fiber that overflowed has none left.
class AlternateSignalStack {
public:
  AlternateSignalStack() : memory_(64 * 1024) {
    stack_t ss;
    ss.ss_sp = memory_.data();
    ss.ss_size = memory_.size();
    ss.ss_flags = 0;
    installed_ = sigaltstack(&ss, &previous_) == 0;
  }
  ~AlternateSignalStack() {
    if (installed_)
      sigaltstack(&previous_, nullptr);
  }

private:
  std::vector<char> memory_;
  stack_t previous_;
  bool installed_ = false;
};

std::string BlockRunner::threadName(unsigned i) const {
  const tgc_emu_uint3 &t = threads_[i].view.thread_idx;
  return "thread (" + std::to_string(t.x) + "," + std::to_string(t.y) + "," + std::to_string(t.z) +
         ")";
}

std::string BlockRunner::deadlockMessage() const {
  unsigned counts[5] = {0, 0, 0, 0, 0};
  int first[5] = {-1, -1, -1, -1, -1};
  for (unsigned i = 0; i < n_; ++i) {
    unsigned s = (unsigned)threads_[i].state;
    if (counts[s]++ == 0)
      first[s] = (int)i;
  }
  std::string m = "deadlock in kernel " + launch_.kernel + ", block (" +
                  std::to_string(blockIdx_.x) + "," + std::to_string(blockIdx_.y) + "," +
                  std::to_string(blockIdx_.z) + "):";
  auto part = [&](State s, const char *what) {
    unsigned k = (unsigned)s;
    if (counts[k])
      m += " " + std::to_string(counts[k]) + " threads " + what +
           " (first: " + threadName(first[k]) + ");";
  };
  part(State::AtBarrier, "wait at __syncthreads");
  part(State::AtWarpOp, "wait in a warp operation (__shfl_*_sync, __syncwarp, __ballot_sync)");
  part(State::Exited, "have exited");
  for (unsigned w = 0; w < warps_.size(); ++w)
    if (warps_[w].arrived)
      m += " warp " + std::to_string(w) + ": lanes " + hex(warps_[w].arrived) + " wait for lanes " +
           hex(warps_[w].mask[__builtin_ctz(warps_[w].arrived)] & ~warps_[w].arrived) + ";";
  m += " every thread of a block must reach each __syncthreads, and every lane of a mask "
       "its warp operation: a return or branch around a barrier that only some threads "
       "take (a divergent barrier) hangs a GPU";
  return m;
}

} // namespace

void runGrid(const GridLaunch &launch) {
  const uint64_t blocks = (uint64_t)launch.grid.x * launch.grid.y * launch.grid.z;
  unsigned workers = (unsigned)std::max<uint64_t>(1, std::min<uint64_t>(launch.workers, blocks));
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex errorMutex;
  uint64_t errorBlock = UINT64_MAX;
  std::string error;
  installFaultHandler();
  auto work = [&] {
    AlternateSignalStack altStack;
    try {
      BlockRunner runner(launch);
      while (!failed.load(std::memory_order_relaxed)) {
        uint64_t b = next.fetch_add(1);
        if (b >= blocks)
          break;
        tgc_emu_uint3 idx{(unsigned)(b % launch.grid.x),
                          (unsigned)(b / launch.grid.x % launch.grid.y),
                          (unsigned)(b / ((uint64_t)launch.grid.x * launch.grid.y))};
        std::string e = runner.run(idx);
        if (!e.empty()) {
          std::lock_guard<std::mutex> lock(errorMutex);
          if (b < errorBlock)
            errorBlock = b, error = e;
          failed = true;
        }
      }
    } catch (const std::exception &e) {
      std::lock_guard<std::mutex> lock(errorMutex);
      failed = true;
      if (error.empty())
        error = e.what();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned w = 1; w < workers; ++w)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  if (failed)
    throw EmuError(error);
}

} // namespace tgc::emu::detail
