//===- math_constants.h - CUDA's CUDART_* constants under CPU emulation ---===//
#ifndef TGC_CUDA_EMU_MATH_CONSTANTS_H
#define TGC_CUDA_EMU_MATH_CONSTANTS_H
#include "cuda_emu.h"
#define CUDART_INF_F __int_as_float(0x7f800000)
#define CUDART_NAN_F __int_as_float(0x7fffffff)
#define CUDART_MAX_NORMAL_F __int_as_float(0x7f7fffff)
#define CUDART_MIN_DENORM_F __int_as_float(0x00000001)
#define CUDART_INF __longlong_as_double(0x7ff0000000000000LL)
#define CUDART_NAN __longlong_as_double(0xfff8000000000000LL)
#define CUDART_PI_F 3.141592654f
#define CUDART_PI 3.1415926535897931e+0
#define CUDART_SQRT_HALF_F 0.707106781f
#define CUDART_SQRT_2PI_F 2.506628275f
#endif // TGC_CUDA_EMU_MATH_CONSTANTS_H
