// zyfa/zyfa.hpp -- umbrella header. Include this one in a HIP (AMD), CUDA (nvcc) or plain C++ (host
// backend only) translation unit. The platform is decided once, in platform/platform.hpp.
#pragma once

#include "platform/platform.hpp"
#include "dtype.hpp"
#include "status.hpp"
#include "tensor.hpp"
#include "params.hpp"
#include "validate.hpp"
#include "numeric/bit_cast.hpp"
#include "numeric/bf16.hpp"
#include "numeric/e4m3.hpp"
#include "host/head_matrix.hpp"
#include "host/reference.hpp"
#include "host/fp8_spec.hpp"
#include "host/fp32_attention.hpp"
#include "host/quantize.hpp"
#include "host/backend.hpp"
#include "host/accuracy.hpp"
#include "merge.hpp"
// GPU entry point zyfa::flash_attn_func (BF16 kernels); its body is compiled only when nvcc or HIP clang is
// compiling (a host-only build sees the header's guard and nothing else).
#include "flash_attn.hpp"
