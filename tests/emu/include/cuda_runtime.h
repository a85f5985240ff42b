//===- cuda_runtime.h - stand-in for CUDA's header under CPU emulation --------===//
// Everything it would declare comes from the force-included prelude.
#include "cuda_emu.h"
