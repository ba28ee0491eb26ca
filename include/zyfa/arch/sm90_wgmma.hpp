// zyfa/arch/sm90_wgmma.hpp -- sm_90a warpgroup instructions: wgmma.mma_async (bf16 or e4m3 in, fp32 accumulators),
// its fences and groups, shared-memory matrix descriptors, setmaxnreg (instruction wrappers only).
//
// Sources: PTX ISA 9.0 §9.7.15 (warpgroup MMA: §9.7.15.5.1.2 matrix descriptors and the canonical 128-byte-swizzle
// layouts, §9.7.15.5.2 wgmma.mma_async, §9.7.15.7 wgmma.fence / commit_group / wait_group), §9.7.19.5 setmaxnreg.
// wgmma and setmaxnreg "require sm_90a": they exist only in a device pass for the arch-specific target
// (nvcc -gencode=arch=compute_90a,code=sm_90a defines __CUDA_ARCH_FEAT_SM90_ALL). ZYFA_SM90A_PASS is 1 exactly then;
// in every other device pass the wrappers trap (a kernel built on them must not be launched there, and the host
// dispatch checks that the sm_90a body exists: bf16/sm90/launch_ws.hpp).
//
// Accumulator layout of m64nNk16 (fp32, per thread t = 0..127 of the warpgroup, warp w = t/32, lane l = t%32;
// PTX Figure "WGMMA .m64nNk16 register fragment layout for accumulator matrix D"): register i holds
//   row 16*w + l/4 + 8*((i/2) % 2), column 8*(i/4) + 2*(l%4) + i%2,   i in [0, N/2).
// A from registers (RS), m64k16 bf16: 4 b32, register j holds rows 16*w + l/4 + 8*(j%2), k = 8*(j/2) + 2*(l%4)
// (+1 in the upper half). Hence the A fragment of keys [16*kb, 16*kb+16) of a P tile is exactly accumulator
// registers 8*kb .. 8*kb+7 of the S tile, packed in pairs (FlashAttention-3, arXiv:2407.08608 §3.2).
#pragma once
#include <cstdint>

#include "../platform/platform.hpp"

#if ZYFA_PLATFORM_CUDA

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 900) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ZYFA_SM90A_PASS 1
#else
#define ZYFA_SM90A_PASS 0
#endif

namespace zyfa::arch::sm90 {

/// Shared-memory matrix descriptor (PTX §9.7.15.5.1.2.2) of a 128-byte-swizzled tile: start address `addr`
/// (.shared window, 16-byte aligned; the swizzle atom at a 1024-byte-aligned base, so base offset 0), leading byte
/// offset `lbo` and stride byte offset `sbo` (bytes, multiples of 16). K-major tiles of 128-byte rows: sbo = 1024
/// (8 rows), lbo unused (1). MN-major bf16 tiles (V [key][d]): lbo = bytes between 64-column boxes, sbo = 1024
/// (8 keys). Advancing the start address by +32 bytes moves one k16 step inside a K-major 128-byte row.
__host__ __device__ constexpr std::uint64_t smem_desc_sw128(std::uint32_t addr, std::uint32_t lbo, std::uint32_t sbo) {
  return static_cast<std::uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<std::uint64_t>((lbo & 0x3FFFF) >> 4) << 16) |
         (static_cast<std::uint64_t>((sbo & 0x3FFFF) >> 4) << 32) | (std::uint64_t{1} << 62);  // 1 = 128B swizzle
}

/// `desc` with its start-address field advanced by `add` (bytes / 16), as 32-bit arithmetic on the low word: the
/// field never carries (shared addresses stay below 2^18) and the high word (stride, swizzle) is left as it is, so
/// the compiler keeps one high word for every step instead of 64-bit adds per wgmma.
__host__ __device__ constexpr std::uint64_t desc_advance(std::uint64_t desc, std::uint32_t add) {
  return (desc & 0xFFFFFFFF00000000ull) | static_cast<std::uint32_t>(static_cast<std::uint32_t>(desc) + add);
}

/// Shared-memory matrix descriptor of a 64-byte-swizzled K-major tile (64-byte rows; swizzle atom 8 rows x 64 B at
/// a 512-byte-aligned base): sbo = 512 (8 rows), lbo unused (1); layout type 2 = 64B swizzle (PTX §9.7.15.5.1.2.2).
/// The pattern XORs address bits [5:4] with bits [8:7]: 16-byte chunk c of row r sits at chunk c ^ ((r % 8) / 2).
/// Advancing the start address by +32 bytes moves one k32 step (fp8) inside a row.
__host__ __device__ constexpr std::uint64_t smem_desc_sw64(std::uint32_t addr, std::uint32_t sbo) {
  return static_cast<std::uint64_t>((addr & 0x3FFFF) >> 4) | (std::uint64_t{1} << 16) |
         (static_cast<std::uint64_t>((sbo & 0x3FFFF) >> 4) << 32) | (std::uint64_t{2} << 62);  // 2 = 64B swizzle
}

/// wgmma.mma_async m64nNk16 bf16 x bf16 -> fp32, A and B from shared memory, both K-major:
/// d (N/2 fp32 per thread, layout above) = A(64x16) . B(16xN) + (scale_d ? d : 0). Asynchronous: d must not be
/// touched until wgmma_wait<> has covered the group that holds this instruction.
template <int N>
struct WgmmaSS;
/// wgmma.mma_async m64nNk16 with A from 4 b32 registers (layout above) and B from shared memory MN-major
/// (trans-b = 1): d = A . B + (scale_d ? d : 0). The A registers must not be written until the group completed.
template <int N>
struct WgmmaRS;
/// wgmma.mma_async m64nNk32 e4m3 x e4m3 -> fp32, A and B from shared memory, both K-major (128-byte rows hold 128
/// fp8; FP8 operands have no transpose): d = A(64x32) . B(32xN) + (scale_d ? d : 0).
template <int N>
struct WgmmaSSFp8;
/// wgmma.mma_async m64nNk32 e4m3 with A from 4 b32 registers (register j, byte b: row 16w + l/4 + 8(j%2),
/// k = 16(j/2) + 4(l%4) + b; PTX Figure "WGMMA .m64nNk32 register fragment layout for matrix A") and B K-major in
/// shared memory (for P.V: V^T, keys contiguous): d = A . B + (scale_d ? d : 0).
template <int N>
struct WgmmaRSFp8;

#if ZYFA_SM90A_PASS
#include "sm90_wgmma_ops.inc"

/// wgmma.fence.sync.aligned: orders prior register accesses of accumulators/A fragments before the next wgmma.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
/// wgmma.commit_group.sync.aligned: closes the group of wgmma issued since the last commit.
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
/// wgmma.wait_group.sync.aligned N: returns when at most `Pending` committed groups are still in flight.
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
/// setmaxnreg.inc/dec.sync.aligned.u32: the calling warpgroup's per-thread register count becomes `Regs`
/// (24..256, multiple of 8). Needs a register cap at kernel entry (__launch_bounds__(threads, 1)).
template <int Regs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Regs));
}
template <int Regs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Regs));
}
#else
__device__ __forceinline__ void wgmma_fence() { __trap(); }
__device__ __forceinline__ void wgmma_commit() { __trap(); }
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  __trap();
}
template <int Regs>
__device__ __forceinline__ void setmaxnreg_inc() {
  __trap();
}
template <int Regs>
__device__ __forceinline__ void setmaxnreg_dec() {
  __trap();
}
#endif

/// Keeps the compiler from moving accesses of `x` across a wgmma fence/wait (an empty asm that "reads and
/// writes" every element; CUTLASS warpgroup_fence_operand).
template <int N>
__device__ __forceinline__ void fence_operand(float (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(x[i])::"memory");
}
template <int N>
__device__ __forceinline__ void fence_operand(std::uint32_t (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(x[i])::"memory");
}

/// x, which the caller knows to be the same in every lane, marked warp-uniform for the compiler (lane 0's value):
/// wgmma descriptors computed from it then live in uniform registers (UIADD3/UMOV on the uniform datapath) instead
/// of vector registers moved to uniform ones before every wgmma (R2UR; 48 per key tile in the BF16 kernel before).
/// CUTLASS's canonical_warp_group_idx uses the same shuffle.
__device__ __forceinline__ int warp_uniform(int x) { return __shfl_sync(0xffffffffu, x, 0); }

}  // namespace zyfa::arch::sm90

#endif  // ZYFA_PLATFORM_CUDA
