// spec_capi -- a C entry point to zyfa's FP8 host specification (include/zyfa/host/fp8_spec.hpp) for the
// accuracy studies in tools/accuracy (Python, ctypes). Every row is computed by zyfa::host::fp8_row itself;
// this file only chooses which keys a row sees and runs heads on several threads.
//
// Built by tools/accuracy/spec.py: g++ -std=c++17 -O3 -ffp-contract=off -shared -fPIC -Iinclude (strict IEEE
// fp32, as the specification requires).
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>
#include <zyfa/zyfa.hpp>

extern "C" {

// One causal attention layer, seqlen_q == seqlen_k == S, BSHD with batch 1, dense:
//   q [S, H, D], k [S, HK, D], v [S, HK, DV] e4m3fn codes; out [S, H, DV] fp32 (before bf16 rounding, descale
//   applied); lse [H, S] natural log.
// Query row i sees keys [lo_i, hi_i): lo_i = max(key_lo, window > 0 ? i - window + 1 : 0), hi_i = min(key_hi,
// i + 1) (key_lo = 0, key_hi = S, window = 0: the plain causal layer, identical to fp8_attention). A row's
// tiles and blocks start at lo_i. Rows with no key: out 0, lse -inf. recipe: the Fp8Recipe value; lse_mode:
// the Fp8LseMode value; block_max_code: Lean P's block max code (-1: the recipe's own, 121 for zyfa, 120 for zyfa_v2).
// Returns 0, or 1 on bad arguments.
int zyfa_spec_attention(int recipe, int lse_mode, int block_max_code, std::int64_t S, std::int64_t H, std::int64_t HK,
                        std::int64_t D, std::int64_t DV, std::int64_t window, std::int64_t key_lo, std::int64_t key_hi,
                        float softmax_scale, float q_descale, float k_descale, float v_descale, const std::uint8_t* q,
                        const std::uint8_t* k, const std::uint8_t* v, float* out, float* lse, int threads) {
  if (recipe < 0 || recipe > 8 || lse_mode < 0 || lse_mode > 2 || S <= 0 || H <= 0 || HK <= 0 || H % HK != 0 ||
      D <= 0 || DV <= 0 || !q || !k || !v || !out || !lse)
    return 1;
  zyfa::AttentionParams p;
  p.batch = 1, p.seqlen_q = p.seqlen_k = S, p.num_heads = H, p.num_heads_k = HK, p.head_dim_qk = D;
  p.head_dim_v = DV, p.qkv_dtype = zyfa::DType::e4m3fn, p.causal = true, p.softmax_scale = softmax_scale;
  p.q_descale = q_descale, p.k_descale = k_descale, p.v_descale = v_descale;
  p.scale_softmax_log2 = zyfa::scale_softmax_log2(softmax_scale, q_descale, k_descale);
  const auto rc = static_cast<zyfa::host::Fp8Recipe>(recipe);
  const auto lm = static_cast<zyfa::host::Fp8LseMode>(lse_mode);
  auto head = [&](std::int64_t h) {
    const std::int64_t hk = h / (H / HK);
    zyfa::host::HeadMatrix km, vm, vsub;
    km.rows = vm.rows = S, km.cols = D, vm.cols = DV;
    km.data.resize(static_cast<std::size_t>(S * D));
    vm.data.resize(static_cast<std::size_t>(S * DV));
    for (std::int64_t j = 0; j < S; ++j) {
      for (std::int64_t d = 0; d < D; ++d) km.data[j * D + d] = zyfa::e4m3fn_to_float(k[(j * HK + hk) * D + d]);
      for (std::int64_t e = 0; e < DV; ++e) vm.data[j * DV + e] = zyfa::e4m3fn_to_float(v[(j * HK + hk) * DV + e]);
    }
    std::vector<float> kt(static_cast<std::size_t>(S * D));  // k transposed: kt[d * S + j]
    for (std::int64_t jj = 0; jj < S; ++jj)
      for (std::int64_t d = 0; d < D; ++d) kt[d * S + jj] = km.data[jj * D + d];
    std::vector<float> qr(static_cast<std::size_t>(D)), t;
    for (std::int64_t i = 0; i < S; ++i) {
      const std::int64_t lo = std::max<std::int64_t>(key_lo, window > 0 ? i - window + 1 : 0);
      const std::int64_t hi = std::min<std::int64_t>(key_hi, i + 1);
      float* o = out + (i * H + h) * DV;
      if (hi <= lo) {
        std::fill(o, o + DV, 0.0f);
        lse[h * S + i] = -std::numeric_limits<float>::infinity();
        continue;
      }
      for (std::int64_t d = 0; d < D; ++d) qr[d] = zyfa::e4m3fn_to_float(q[(i * H + h) * D + d]);
      // fp8_scores_row's arithmetic for every key: increasing d from +0 (fp8_row multiplies by c). Sixteen keys at a
      // time from the transposed k (each key keeps its own sequential sum, so the compiler may vectorise across keys
      // without reassociating anything: the same bits as fp8_scores_row, checked by test_accuracy_study.py).
      t.assign(static_cast<std::size_t>(hi - lo), 0.0f);
      std::int64_t j = lo;
      for (; j + 16 <= hi; j += 16) {
        float acc[16] = {};
        for (std::int64_t d = 0; d < D; ++d) {
          const float qd = qr[d];
          const float* kc = kt.data() + d * S + j;
          for (int u = 0; u < 16; ++u) acc[u] += qd * kc[u];
        }
        for (int u = 0; u < 16; ++u) t[j - lo + u] = acc[u];
      }
      for (; j < hi; ++j) {
        const float* kr = km.row(j);
        float s = 0.0f;
        for (std::int64_t d = 0; d < D; ++d) s += qr[d] * kr[d];
        t[j - lo] = s;
      }
      const zyfa::host::HeadMatrix* vv = &vm;
      if (lo > 0) {
        vsub.rows = hi - lo, vsub.cols = DV;
        vsub.data.assign(vm.data.begin() + lo * DV, vm.data.begin() + hi * DV);
        vv = &vsub;
      }
      const zyfa::host::Fp8RowOutput r = zyfa::host::fp8_row(p, rc, t, *vv, nullptr, nullptr, block_max_code, lm);
      std::copy(r.out.begin(), r.out.end(), o);
      lse[h * S + i] = r.lse;
    }
  };
  const int nt = std::max(1, std::min<int>(threads, static_cast<int>(H)));
  std::vector<std::thread> pool;
  for (int w = 0; w < nt; ++w)
    pool.emplace_back([&, w] {
      for (std::int64_t h = w; h < H; h += nt) head(h);
    });
  for (auto& th : pool) th.join();
  return 0;
}
}
