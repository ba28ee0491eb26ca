// zyfa/fp8/gfx950/attention.hpp -- host side of the generated gfx950 FP8 forward attention kernels
// (tools/zyfa_gen/kernels/attn_fwd_fp8.py; docs/fp8-gfx950.md): the zyfa recipe of host/fp8_spec.hpp on e4m3fn
// Q/K/V with per-tensor descales, bf16 out, optional LSE. Head dims (128, 128) and MLA (192, 128); causal
// (bottom-right) or not; any seqlen_q, seqlen_k >= 1; batch; GQA/MQA; BSHD element strides.
//
// Argument checks and the packed argument struct are platform-free (validate_fp8_attention, make_fp8_attention_args,
// tested on the host); the launch (launch_fp8_attention) is HIP on AMD only and goes through the generated dispatch
// table (dispatch_table.inc) and the code-object loader (code_object.hpp). Verified in the gfx950 CPU emulator
// against the specification; never run on an MI355X.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "../../dtype.hpp"
#include "../../params.hpp"
#include "../../platform/platform.hpp"
#include "../../status.hpp"
#include "dispatch_table.inc"

#if ZYFA_PLATFORM_HIP
#include "code_object.hpp"
#endif

namespace zyfa::fp8::gfx950 {

/// Kernel family and configuration of the (head_dim_qk, head_dim_v) pair in the generated dispatch table, or
/// nullptr when that pair has no generated kernel.
inline const char* attention_config(std::int64_t head_dim_qk, std::int64_t head_dim_v) {
  if (head_dim_qk == 128 && head_dim_v == 128) return "m=32,d=128,dv=128";
  if (head_dim_qk == 192 && head_dim_v == 128) return "m=32,d=192,dv=128";
  return nullptr;
}
inline constexpr const char* kAttentionFamily = "attn_fwd_fp8";
/// Query rows per wave of the generated kernels (the "m" of the configuration).
inline constexpr std::int64_t kAttentionWaveRows = 32;
/// Query rows per workgroup of the generated kernels: 8 waves (512 threads, two waves per SIMD of a CU) of
/// kAttentionWaveRows rows that share the K/V blocks staged in LDS; grid x = ceil(seqlen_q / kAttentionBlockM).
inline constexpr std::int64_t kAttentionBlockM = 8 * kAttentionWaveRows;

/// The packed kernel arguments: every generated attention kernel takes the same argument list
/// (tools/zyfa_gen/kernels/attn_fwd_fp8.py, args()); the MLA kernel's struct is checked against it member by member.
using AttentionArgs = gen::zyfa_fp8_fwd_d128_m32_args;
using MlaAttentionArgs = gen::zyfa_fp8_fwd_d192_dv128_m32_args;
static_assert(sizeof(AttentionArgs) == sizeof(MlaAttentionArgs), "attention kernels: one argument layout");
#define ZYFA_FP8_SAME_OFFSET(m)                                                 \
  static_assert(offsetof(AttentionArgs, m) == offsetof(MlaAttentionArgs, m) && \
                    sizeof(AttentionArgs::m) == sizeof(MlaAttentionArgs::m),   \
                "attention kernels: one argument layout (" #m ")")
ZYFA_FP8_SAME_OFFSET(q);
ZYFA_FP8_SAME_OFFSET(k);
ZYFA_FP8_SAME_OFFSET(v);
ZYFA_FP8_SAME_OFFSET(out);
ZYFA_FP8_SAME_OFFSET(lse);
ZYFA_FP8_SAME_OFFSET(q_batch_stride);
ZYFA_FP8_SAME_OFFSET(q_row_stride);
ZYFA_FP8_SAME_OFFSET(q_head_stride);
ZYFA_FP8_SAME_OFFSET(k_batch_stride);
ZYFA_FP8_SAME_OFFSET(k_row_stride);
ZYFA_FP8_SAME_OFFSET(k_head_stride);
ZYFA_FP8_SAME_OFFSET(v_batch_stride);
ZYFA_FP8_SAME_OFFSET(v_row_stride);
ZYFA_FP8_SAME_OFFSET(v_head_stride);
ZYFA_FP8_SAME_OFFSET(out_batch_stride);
ZYFA_FP8_SAME_OFFSET(out_row_stride);
ZYFA_FP8_SAME_OFFSET(out_head_stride);
ZYFA_FP8_SAME_OFFSET(seqlen_q);
ZYFA_FP8_SAME_OFFSET(seqlen_k);
ZYFA_FP8_SAME_OFFSET(num_heads);
ZYFA_FP8_SAME_OFFSET(group_magic);
ZYFA_FP8_SAME_OFFSET(causal);
ZYFA_FP8_SAME_OFFSET(scale_log2);
ZYFA_FP8_SAME_OFFSET(v_descale);
#undef ZYFA_FP8_SAME_OFFSET

/// Preconditions of the gfx950 FP8 kernels beyond make_params' (which validated shapes, strides and pointers).
/// Returns unsupported (message naming the argument) for: a dtype other than e4m3fn (e4m3fnuz is gfx942's
/// format), an output dtype other than bf16, a head-dim pair without a generated kernel, variable-length
/// params, a stride (of a dim larger than 1) of 2^32 elements or more (32-bit stride arguments; the kernels' base
/// offsets are 64-bit, so tensors may pass 2^31 elements and 2^32 bytes), a row stride whose 64 rows span 2^32
/// bytes or more (32-bit per-lane buffer offsets inside a 64-row block), more than 65,535 heads or batches (grid
/// y / z); invalid_argument for alignment: q, k 16-byte aligned with strides (of dims larger than 1)
/// multiples of 16 elements (dwordx4 loads); v likewise (dwordx4 LDS-DMA); out 8-byte aligned, strides
/// multiples of 4 elements (4 bf16 per store); softmax_lse 4-byte aligned.
inline Status validate_fp8_attention(const AttentionParams& p) {
  if (p.qkv_dtype != DType::e4m3fn)
    return Status::unsupported(std::string("q: dtype ") + dtype_name(p.qkv_dtype) +
                               " on gfx950 (the FP8 kernels take OCP e4m3fn)");
  if (p.out_dtype != DType::bf16) return Status::unsupported("out: the gfx950 FP8 kernels write bf16");
  if (attention_config(p.head_dim_qk, p.head_dim_v) == nullptr)
    return Status::unsupported("q: head dims (" + std::to_string(p.head_dim_qk) + ", " +
                               std::to_string(p.head_dim_v) +
                               ") have no generated gfx950 FP8 kernel (built: (128, 128), (192, 128))");
  if (p.is_varlen()) return Status::unsupported("cu_seqlens_q: variable-length FP8 attention is not generated yet");
  // Base offsets are 64-bit in the kernels (tensors may pass 2^31 elements and 2^32 bytes); the strides travel as
  // 32-bit arguments, and the per-lane offsets inside one 64-row block are 32-bit buffer offsets.
  auto offsets = [](const char* name, std::int64_t elem, std::int64_t b, std::int64_t s, std::int64_t h,
                    std::int64_t sb, std::int64_t sr, std::int64_t sh) -> Status {
    const std::int64_t sizes[3] = {b, s, h}, st[3] = {sb, sr, sh};
    const char* dims[3] = {"batch", "row", "head"};
    for (int i = 0; i < 3; ++i)
      if (sizes[i] > 1 && st[i] > 0xffffffffLL)
        return Status::unsupported(std::string(name) + ": " + dims[i] + " stride " + std::to_string(st[i]) +
                                   " elements does not fit the gfx950 FP8 kernel's 32-bit stride argument");
    if (s > 1 && 64 * sr * elem > 0xffffffffLL)
      return Status::unsupported(std::string(name) + ": row stride " + std::to_string(sr) +
                                 " elements: 64 rows must span less than 2^32 bytes (gfx950 FP8 kernel)");
    return Status::success();
  };
  for (Status st : {offsets("q", 1, p.batch, p.seqlen_q, p.num_heads, p.q_batch_stride, p.q_row_stride,
                            p.q_head_stride),
                    offsets("k", 1, p.batch, p.seqlen_k, p.num_heads_k, p.k_batch_stride, p.k_row_stride,
                            p.k_head_stride),
                    offsets("v", 1, p.batch, p.seqlen_k, p.num_heads_k, p.v_batch_stride, p.v_row_stride,
                            p.v_head_stride),
                    offsets("out", 2, p.batch, p.seqlen_q, p.num_heads, p.out_batch_stride, p.out_row_stride,
                            p.out_head_stride)})
    if (!st) return st;
  if (p.num_heads > 65535) return Status::unsupported("q: more than 65,535 heads (grid y)");
  if (p.batch > 65535) return Status::unsupported("q: batch above 65,535 (grid z)");
  if (p.query_blocks(kAttentionBlockM) / (p.batch * p.num_heads) > 0x7fffffff)
    return Status::unsupported("q: seqlen_q too large for the grid");
  auto aligned = [](const void* ptr, std::uintptr_t a) { return reinterpret_cast<std::uintptr_t>(ptr) % a == 0; };
  auto strides = [](const char* name, std::int64_t mult, std::int64_t b, std::int64_t s, std::int64_t h,
                    std::int64_t sb, std::int64_t sr, std::int64_t sh) -> Status {
    const std::int64_t sizes[3] = {b, s, h}, st[3] = {sb, sr, sh};
    const char* dims[3] = {"batch", "row", "head"};
    for (int i = 0; i < 3; ++i)
      if (sizes[i] > 1 && st[i] % mult != 0)
        return Status::invalid(std::string(name) + ": " + dims[i] + " stride " + std::to_string(st[i]) +
                               " is not a multiple of " + std::to_string(mult) + " elements (gfx950 FP8 kernel)");
    return Status::success();
  };
  if (!aligned(p.q, 16)) return Status::invalid("q: pointer not 16-byte aligned (gfx950 FP8 kernel)");
  if (!aligned(p.k, 16)) return Status::invalid("k: pointer not 16-byte aligned (gfx950 FP8 kernel)");
  if (!aligned(p.v, 16)) return Status::invalid("v: pointer not 16-byte aligned (gfx950 FP8 kernel)");
  if (!aligned(p.out, 8)) return Status::invalid("out: pointer not 8-byte aligned (gfx950 FP8 kernel)");
  if (p.softmax_lse != nullptr && !aligned(p.softmax_lse, 4))
    return Status::invalid("softmax_lse: pointer not 4-byte aligned");
  for (Status st : {strides("q", 16, p.batch, p.seqlen_q, p.num_heads, p.q_batch_stride, p.q_row_stride,
                            p.q_head_stride),
                    strides("k", 16, p.batch, p.seqlen_k, p.num_heads_k, p.k_batch_stride, p.k_row_stride,
                            p.k_head_stride),
                    strides("v", 16, p.batch, p.seqlen_k, p.num_heads_k, p.v_batch_stride, p.v_row_stride,
                            p.v_head_stride),
                    strides("out", 4, p.batch, p.seqlen_q, p.num_heads, p.out_batch_stride, p.out_row_stride,
                            p.out_head_stride)})
    if (!st) return st;
  return Status::success();
}

/// The kernel's division constant for the K/V head: floor(2^32 / group) + 1 for group >= 2 (mul_hi(h, magic) =
/// h / group for h * group < 2^32), 0 for group 1.
inline std::uint32_t group_magic(std::int64_t group) {
  return group <= 1 ? 0u : static_cast<std::uint32_t>((std::uint64_t{1} << 32) / static_cast<std::uint64_t>(group) + 1);
}

/// The packed kernel arguments of validated params. Strides of dims of size 1 are never used for addressing
/// beyond row 0; they are replaced by 0 (batch, head) and the row length (row) so that any value make_params
/// accepts there fits the 32-bit fields.
inline AttentionArgs make_fp8_attention_args(const AttentionParams& p) {
  AttentionArgs a;
  std::memset(&a, 0, sizeof(a));
  a.q = static_cast<const std::uint8_t*>(p.q);
  a.k = static_cast<const std::uint8_t*>(p.k);
  a.v = static_cast<const std::uint8_t*>(p.v);
  a.out = static_cast<std::uint16_t*>(p.out);
  a.lse = p.softmax_lse;
  auto st = [](std::int64_t size, std::int64_t stride, std::int64_t unit) {
    return static_cast<std::uint32_t>(size > 1 ? stride : unit);
  };
  a.q_batch_stride = st(p.batch, p.q_batch_stride, 0);
  a.q_row_stride = st(p.seqlen_q, p.q_row_stride, p.head_dim_qk);
  a.q_head_stride = st(p.num_heads, p.q_head_stride, 0);
  a.k_batch_stride = st(p.batch, p.k_batch_stride, 0);
  a.k_row_stride = st(p.seqlen_k, p.k_row_stride, p.head_dim_qk);
  a.k_head_stride = st(p.num_heads_k, p.k_head_stride, 0);
  a.v_batch_stride = st(p.batch, p.v_batch_stride, 0);
  a.v_row_stride = st(p.seqlen_k, p.v_row_stride, p.head_dim_v);
  a.v_head_stride = st(p.num_heads_k, p.v_head_stride, 0);
  a.out_batch_stride = st(p.batch, p.out_batch_stride, 0);
  a.out_row_stride = st(p.seqlen_q, p.out_row_stride, p.head_dim_v);
  a.out_head_stride = st(p.num_heads, p.out_head_stride, 0);
  a.seqlen_q = static_cast<std::uint32_t>(p.seqlen_q);
  a.seqlen_k = static_cast<std::uint32_t>(p.seqlen_k);
  a.num_heads = static_cast<std::uint32_t>(p.num_heads);
  a.group_magic = group_magic(p.group_size());
  a.causal = p.causal ? 1u : 0u;
  a.scale_log2 = p.scale_softmax_log2;
  a.v_descale = p.v_descale;
  return a;
}

#if ZYFA_PLATFORM_HIP
/// Validates `p` (validate_fp8_attention), finds the kernel of its head dims in the generated dispatch table and
/// launches it on `stream` (asynchronous): grid (ceil(seqlen_q / kAttentionBlockM), num_heads, batch), the
/// kernel's workgroup size (512 threads: 8 waves). Errors: as
/// validate_fp8_attention; unsupported on a device that is not gfx950; runtime_error from HIP.
inline Status launch_fp8_attention(const AttentionParams& p, hipStream_t stream) {
  Status s = validate_fp8_attention(p);
  if (!s) return s;
  const gen::KernelEntry* e = gen::find_kernel(kAttentionFamily, attention_config(p.head_dim_qk, p.head_dim_v));
  if (e == nullptr || e->kernarg_size != sizeof(AttentionArgs))
    return Status::unsupported("q: the gfx950 FP8 kernel of these head dims is missing from the dispatch table");
  const CodeObjectRef co{e->code_object, e->code_object_size, e->name};
  const AttentionArgs a = make_fp8_attention_args(p);
  const auto tiles = static_cast<unsigned>((p.seqlen_q + kAttentionBlockM - 1) / kAttentionBlockM);
  return launch(co, a, tiles, static_cast<unsigned>(p.num_heads), static_cast<unsigned>(p.batch), e->workgroup_size,
                stream);
}
#endif

}  // namespace zyfa::fp8::gfx950
