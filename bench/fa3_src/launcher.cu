// bench/fa3_src/launcher.cu -- FlashAttention-3's sm_90 forward kernel compiled from its source in this project's
// toolkit, behind a C entry point for bench/bench_fa3_src.py (ctypes). It separates FA3's algorithm from the code
// generation of the `fa3-fwd` wheel: the same source, this nvcc, the same inputs as zyfa. Built by
// bench/build_fa3_src.sh against FlashAttention's hopper/ folder and its CUTLASS submodule (pinned commits there);
// the FA3X_* macros that script defines select the ablations it patches into a copy of that source.
//
// Not part of the library: nothing in include/ uses it, and CI neither builds nor runs it.
#include <cmath>
#include <cstring>

#include "flash_fwd_launch_template.h"

/// Forward attention with FA3's hdim-128 bf16 kernel (FA3 hopper/flash_fwd_launch_template.h, run_flash_fwd;
/// tile 128 x 128 causal, 128 x 176 non-causal, no cluster). q, k, v, o: contiguous bf16 BSHD device tensors
/// ([b, sq, h, 128], [b, sk, hk, 128]); lse: fp32 [b, h, sq] (natural log); softmax scale 1/sqrt(128); causal
/// bottom-right. semaphore: one int32 of device memory, zeroed here on `stream` before each causal call (FA3's
/// dynamic tile scheduler takes tiles from it). num_sm: the persistent grid. Returns the CUDA error code of the
/// launch (0 on success).
extern "C" int fa3src_fwd(void* q, void* k, void* v, void* o, float* lse, int b, int sq, int sk, int h, int hk,
                          int causal, int* semaphore, int num_sm, void* stream) {
  Flash_fwd_params p;
  std::memset(&p, 0, sizeof(p));
  const int d = 128;
  p.q_ptr = q;
  p.k_ptr = k;
  p.v_ptr = v;
  p.o_ptr = o;
  p.q_row_stride = static_cast<int64_t>(h) * d;
  p.q_head_stride = d;
  p.q_batch_stride = static_cast<int64_t>(sq) * h * d;
  p.k_row_stride = static_cast<int64_t>(hk) * d;
  p.k_head_stride = d;
  p.k_batch_stride = static_cast<int64_t>(sk) * hk * d;
  p.v_row_stride = p.k_row_stride;
  p.v_head_stride = d;
  p.v_batch_stride = p.k_batch_stride;
  p.v_dim_stride = 1;
  p.o_row_stride = p.q_row_stride;
  p.o_head_stride = d;
  p.o_batch_stride = p.q_batch_stride;
  p.h = h, p.h_k = hk, p.b = p.b_k = b, p.seqlen_q = sq, p.seqlen_k = sk;
  p.d = p.dv = p.d_rounded = p.dv_rounded = d;
  p.seqlen_q_rounded = (sq + 127) / 128 * 128;
  p.seqlen_k_rounded = (sk + 127) / 128 * 128;
  p.total_q = sq * b;
  p.total_k = sk * b;
  p.softmax_lse_ptr = lse;
  p.scale_softmax = 1.0f / std::sqrt(static_cast<float>(d));
  p.is_bf16 = true;
  p.is_causal = causal != 0;
  p.window_size_left = -1;
  p.window_size_right = causal ? 0 : -1;
  p.num_splits = 1;
  p.tile_count_semaphore = semaphore;
  p.head_swizzle = causal != 0;
  p.arch = 90;
  p.num_sm = num_sm;
  p.page_size = 1;
  auto s = static_cast<cudaStream_t>(stream);
  if (causal) {
    cudaMemsetAsync(semaphore, 0, sizeof(int), s);
    run_flash_fwd<90, 128, 128, 1, cutlass::bfloat16_t, cutlass::bfloat16_t, true, false, false, false, false, false,
                  false, false, false, false>(p, s);
  } else {
    run_flash_fwd<90, 128, 128, 1, cutlass::bfloat16_t, cutlass::bfloat16_t, false, false, false, false, false, false,
                  false, false, false, false>(p, s);
  }
  return static_cast<int>(cudaGetLastError());
}
