// bench/zyfa_torch_ext_variants.cu -- tile-size variants of the sm_90 kernel, timed by bench_h200.py --variants
// to choose tile_config.hpp's entries (each is one zyfa::bf16::launch<KernelConfig<...>> instantiation).
#include <cstdint>
#include <string>
#include <vector>

#include <zyfa/flash_attn.hpp>

#include "zyfa_ext_tensor.hpp"

namespace {
using zyfa::bf16::KernelConfig;
struct Variant {
  int dqk, dv, block_m, block_n, warps, skip_rescale;
  zyfa::Status (*launch)(const zyfa::AttentionParams&, zyfa::rt::stream_t);
};
template <int DQK, int DV, int BM, int BN, int W, bool Skip = true>
Variant make() {
  return {DQK, DV, BM, BN, W, Skip, &zyfa::bf16::launch<KernelConfig<DQK, DV, BM, BN, W, Skip>>};
}
const std::vector<Variant>& variants() {
  static const std::vector<Variant> v = {
      make<64, 64, 128, 128, 4>(),  make<64, 64, 128, 64, 4>(),          make<64, 64, 128, 128, 8>(),
      make<128, 128, 128, 64, 4>(), make<128, 128, 128, 64, 4, false>(), make<128, 128, 128, 128, 8>(),
      make<128, 128, 128, 32, 4>(), make<256, 256, 128, 64, 8, false>(), make<256, 256, 64, 64, 4, false>(),
      make<256, 256, 128, 64, 8>(), make<192, 128, 128, 64, 4>(),        make<192, 128, 128, 128, 8>(),
  };
  return v;
}
using zyfa_bench::make_ref;
}  // namespace

/// Number of variants and their description "dqk dv BlockM BlockN Warps SkipRescale" (index i).
int zyfa_ext_num_variants() { return static_cast<int>(variants().size()); }
std::vector<int> zyfa_ext_variant_desc(int i) {
  const Variant& v = variants().at(i);
  return {v.dqk, v.dv, v.block_m, v.block_n, v.warps, v.skip_rescale};
}

std::string zyfa_ext_forward_variant(int idx, void* q, const std::int64_t* q_shape, const std::int64_t* q_stride,
                                     void* k, const std::int64_t* k_shape, const std::int64_t* k_stride, void* v,
                                     const std::int64_t* v_shape, const std::int64_t* v_stride, void* out,
                                     const std::int64_t* o_shape, const std::int64_t* o_stride, float* lse, bool causal,
                                     std::int64_t stream) {
  zyfa::AttentionOptions opt;
  opt.causal = causal;
  zyfa::AttentionParams p;
  zyfa::Status s = zyfa::make_params(make_ref(q, q_shape, q_stride), make_ref(k, k_shape, k_stride),
                                     make_ref(v, v_shape, v_stride), make_ref(out, o_shape, o_stride), lse, opt, &p);
  if (s.ok()) s = variants().at(idx).launch(p, reinterpret_cast<cudaStream_t>(stream));
  return s.ok() ? std::string() : s.message;
}
