// zyfa/arch/sm90_tma.hpp -- sm_90 tensor memory accelerator (TMA): tensor-map encoding on the host and the bulk
// tensor copies on the device (instruction wrappers only).
//
// Sources: PTX ISA 9.0 §9.7.9.25.5.2 (cp.async.bulk.tensor load with .mbarrier::complete_tx::bytes, store with
// .bulk_group), §9.7.9.25.6 (cp.async.bulk.commit_group / wait_group.read), §5.5.8 (tensor maps in .param space,
// prefetch.tensormap), §5.5.3.3 (out-of-bounds box elements are zero-filled on load; the transaction count is the
// FULL box size; stores are clipped at the tensor bounds); CUDA 13 driver API cuTensorMapEncodeTiled (cuda.h),
// obtained through cudaGetDriverEntryPointByVersion so that no program has to link libcuda.
// Coordinates are signed 32-bit, innermost (contiguous) dimension first; shared destinations of a 128-byte-swizzled
// box must be 1024-byte aligned. Needs sm_90 (any sm_90 target).
#pragma once
#include <cstdint>

#include "../platform/platform.hpp"

#if ZYFA_PLATFORM_CUDA
#include <cuda.h>
#include <cudaTypedefs.h>

namespace zyfa::arch::sm90 {

/// cuTensorMapEncodeTiled from the driver (cudaGetDriverEntryPointByVersion, CUDA 12.0 ABI: no libcuda link), looked
/// up once per process; nullptr when the driver does not provide it.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = []() -> PFN_cuTensorMapEncodeTiled_v12000 {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

/// A 4-D tensor map of `type` with 128-byte swizzle and box {box_cols, box_rows, 1, 1}, box_cols elements being 128
/// bytes (the two public encoders below). Returns false when the encoder is missing or the driver rejects the map.
inline bool encode_tensor_map_4d_sw128(CUtensorMap* map, CUtensorMapDataType type, std::uint32_t box_cols,
                                       const void* gaddr, const std::uint64_t (&dims)[4],
                                       const std::uint64_t (&strides_bytes)[3], std::uint32_t box_rows) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const cuuint64_t gdim[4] = {dims[0], dims[1], dims[2], dims[3]};
  const cuuint64_t gstride[3] = {strides_bytes[0], strides_bytes[1], strides_bytes[2]};
  const cuuint32_t box[4] = {box_cols, box_rows, 1, 1};
  const cuuint32_t estride[4] = {1, 1, 1, 1};
  return encode(map, type, 4, const_cast<void*>(gaddr), gdim, gstride, box, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

/// Encodes a 4-D bf16 tensor map with 128-byte swizzle: dims[0] contiguous (elements), strides_bytes[0..2] of
/// dims 1..3 (bytes, multiples of 16, < 2^40), box {64, box_rows, 1, 1} (box_rows <= 256): one box is box_rows
/// rows of 64 bf16 = 128 bytes, laid out in shared memory as the 128B swizzle pattern (row r, 16-byte chunk c at
/// chunk c ^ (r % 8)). Out-of-bounds elements of a load read as zero. Returns false (map unusable) when the driver
/// entry point is missing or the driver rejects the arguments (unaligned address or stride, dims >= 2^32).
inline bool encode_tensor_map_bf16_4d(CUtensorMap* map, const void* gaddr, const std::uint64_t (&dims)[4],
                                      const std::uint64_t (&strides_bytes)[3], std::uint32_t box_rows) {
  return encode_tensor_map_4d_sw128(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 64, gaddr, dims, strides_bytes, box_rows);
}

/// Encodes a 4-D tensor map of 1-byte elements (e4m3fn codes, as CU_TENSOR_MAP_DATA_TYPE_UINT8) with 128-byte
/// swizzle: as encode_tensor_map_bf16_4d, but one box is box_rows rows of 128 elements = 128 bytes.
inline bool encode_tensor_map_u8_4d(CUtensorMap* map, const void* gaddr, const std::uint64_t (&dims)[4],
                                    const std::uint64_t (&strides_bytes)[3], std::uint32_t box_rows) {
  return encode_tensor_map_4d_sw128(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 128, gaddr, dims, strides_bytes, box_rows);
}

/// prefetch.tensormap: brings a tensor map (a __grid_constant__ kernel parameter) into the descriptor cache.
__device__ __forceinline__ void tma_prefetch(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)) : "memory");
}

/// cp.async.bulk.tensor.4d load of the box at coordinates (c0..c3) into shared memory at `dst` (.shared address);
/// completes `box bytes` transactions on mbarrier `bar` (the full box, also where it reaches past the tensor and is
/// zero-filled). Issued by one thread; the CTA-local address is valid for .shared::cluster without clusters.
__device__ __forceinline__ void tma_load_4d(std::uint32_t dst, const CUtensorMap* map, std::uint32_t bar, int c0,
                                            int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
      "[%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

/// An L2 cache policy from createpolicy.fractional with fraction 1.0 (PTX ISA 9.0 §9.7.9.17, createpolicy), for the
/// .L2::cache_hint of tma_load_4d: evict_last for data that other CTAs read again soon (K and V tiles, read by every
/// m block of a head), evict_first for data read once (Q tiles). FlashAttention-3 loads K/V and Q with these policies.
__device__ __forceinline__ std::uint64_t l2_policy_evict_last() {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
/// As l2_policy_evict_last, with evict_first.
__device__ __forceinline__ std::uint64_t l2_policy_evict_first() {
  std::uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
/// tma_load_4d with an L2 cache policy (l2_policy_evict_last / l2_policy_evict_first): the hint changes which lines
/// L2 keeps, never the data.
__device__ __forceinline__ void tma_load_4d(std::uint32_t dst, const CUtensorMap* map, std::uint32_t bar, int c0,
                                            int c1, int c2, int c3, std::uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3, "
      "%4, %5, %6}], [%2], %7;\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "l"(policy)
      : "memory");
}

/// cp.async.bulk.tensor.4d store of the box at (c0..c3) from shared memory `src` (.shared address); elements
/// outside the tensor are not written. Issued by one thread after the writers' fence_proxy_async_shared() and a
/// barrier; then tma_store_commit() and tma_store_wait_read() before `src` is reused or the CTA exits.
__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, std::uint32_t src, int c0, int c1, int c2,
                                             int c3) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
                   reinterpret_cast<std::uint64_t>(map)),
               "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}
/// cp.async.bulk.commit_group: closes the group of bulk stores issued by this thread.
__device__ __forceinline__ void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
/// cp.async.bulk.wait_group.read 0: waits until every committed bulk store of this thread has read its source.
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
/// cp.async.bulk.wait_group 0: waits until every committed bulk store of this thread has completed (its writes to
/// global memory made, so that a later store of the same addresses lands after them; PTX ISA 8.x, "cp.async.bulk.
/// wait_group").
__device__ __forceinline__ void tma_store_wait() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }

}  // namespace zyfa::arch::sm90

#endif  // ZYFA_PLATFORM_CUDA
