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
