// zyfa/host/accuracy.hpp -- how far each FP8 recipe (and a bf16/fp32 kernel) is from fp64 attention.
//
// For one attention problem, every recipe of fp8_spec.hpp and the fp32-arithmetic bf16 path
// (fp32_attention.hpp) are run and compared with the fp64 reference (reference.hpp):
//   rel_fro_error   ||O - O_ref||_F / ||O_ref||_F over all elements of out, O = the bf16 output (what a
//                   user receives), O_ref = fp64;
//   max_abs_error   max |O - O_ref|;
//   mean_kl         KL(p_ref || p_test) = sum_j p_ref_j ln(p_ref_j / max(p_test_j, kKlFloor)) in nats, per
//                   attention row (p_test = the effective probabilities the recipe applied), averaged over
//                   rows that see at least one key. A recipe that flushes a probability to 0 would have an
//                   infinite KL; the floor kKlFloor = 2^-126 (smallest normal fp32) keeps it finite and
//                   heavily penalised, and flushed_mass reports the loss separately;
//   flushed_mass    mean over those rows of the reference probability mass of keys the recipe gave 0;
//   max_abs_lse_error  max |lse - lse_ref| (natural log) over rows that see a key.
// Inputs. FP8 params (e4m3fn): the recipes run on the codes; the reference is fp64 attention on the
// dequantized inputs (code * descale), which isolates what the kernel adds; the "bf16" row runs the fp32
// path on the dequantized inputs rounded to bf16. bf16 params: the reference is fp64 on the bf16 inputs,
// the "bf16" row runs on them, and the FP8 recipes run on a per-tensor e4m3fn quantization
// (quantize.hpp) of them, so their errors include input quantization.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "../numeric/bf16.hpp"
#include "../numeric/e4m3.hpp"
#include "../params.hpp"
#include "head_matrix.hpp"
#include "fp32_attention.hpp"
#include "fp8_spec.hpp"
#include "reference.hpp"

namespace zyfa::host {

/// Floor applied to test probabilities inside the KL divergence: 2^-126, the smallest normal fp32.
inline constexpr double kKlFloor = 1.1754943508222875e-38;

/// Errors of one recipe against fp64 (see the file comment for the definitions and units).
struct RecipeError {
  std::string name;              ///< "aiter_like", "scaled_p", "zyfa", "zyfa_exact" or "bf16"
  double rel_fro_error = 0;      ///< relative Frobenius error of the bf16 output
  double max_abs_error = 0;      ///< max absolute error of the bf16 output
  double mean_kl = 0;            ///< mean KL(p_ref || p_test) per row, nats
  double flushed_mass = 0;       ///< mean reference probability mass given 0 by the recipe
  double max_abs_lse_error = 0;  ///< max |lse - lse_ref|, natural log
};

namespace detail {

struct ErrorAccumulator {
  double diff2 = 0, ref2 = 0, max_abs = 0, kl = 0, flushed = 0, lse = 0;
  std::int64_t rows = 0;
  void add_row(const double* ref_out, const float* out, std::int64_t dv, const std::vector<double>& p_ref,
               const std::vector<double>& p_test, double ref_lse, double lse_test, bool sees_key) {
    for (std::int64_t e = 0; e < dv; ++e) {
      const double o = bf16_to_float(float_to_bf16(out[e]));
      const double d = o - ref_out[e];
      diff2 += d * d;
      ref2 += ref_out[e] * ref_out[e];
      max_abs = std::max(max_abs, std::fabs(d));
    }
    if (!sees_key) return;
    double k = 0, f = 0;
    for (std::size_t j = 0; j < p_ref.size(); ++j) {
      if (p_ref[j] <= 0) continue;
      k += p_ref[j] * std::log(p_ref[j] / std::max(p_test[j], kKlFloor));
      if (p_test[j] == 0) f += p_ref[j];
    }
    kl += k;
    flushed += f;
    lse = std::max(lse, std::fabs(lse_test - ref_lse));
    ++rows;
  }
  RecipeError result(std::string name) const {
    RecipeError r;
    r.name = std::move(name);
    r.rel_fro_error = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
    r.max_abs_error = max_abs;
    r.mean_kl = rows ? kl / static_cast<double>(rows) : 0;
    r.flushed_mass = rows ? flushed / static_cast<double>(rows) : 0;
    r.max_abs_lse_error = lse;
    return r;
  }
};

// Per-tensor amax of the stored values of q, k or v (for quantizing bf16 inputs).
inline float tensor_amax(const AttentionParams& p, int which) {
  float amax = 0;
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t h = 0; h < (which == 0 ? p.num_heads : p.num_heads_k); ++h) {
      const HeadMatrix m = which == 0 ? read_q_head(p, b, h) : which == 1 ? read_k_head(p, b, h) : read_v_head(p, b, h);
      for (float x : m.data) amax = std::max(amax, std::fabs(x));
    }
  return amax;
}

// Replaces stored values by e4m3fn code values of x / descale (quantize.hpp's rule).
inline HeadMatrix quantized(HeadMatrix m, float descale) {
  for (float& x : m.data) x = e4m3fn_to_float(float_to_e4m3fn(x / descale));
  return m;
}
// Replaces stored values by bf16(x * descale).
inline HeadMatrix dequantized_bf16(HeadMatrix m, float descale) {
  for (float& x : m.data) x = bf16_to_float(float_to_bf16(x * descale));
  return m;
}

}  // namespace detail

/// Errors of the four FP8 recipes and of the bf16 (fp32-arithmetic) path against fp64 for params `p`
/// (host memory; q/k/v bf16 or e4m3fn, see the file comment for what each compares). Rows in the order
/// aiter_like, scaled_p, zyfa, zyfa_exact, bf16. Cost: about six attention computations on the CPU
/// (single thread); p.out and p.softmax_lse are not touched. Returns an empty vector for other dtypes.
inline std::vector<RecipeError> fp8_accuracy_report(const AttentionParams& p) {
  if (p.qkv_dtype != DType::bf16 && p.qkv_dtype != DType::e4m3fn) return {};
  const bool fp8_in = p.qkv_dtype == DType::e4m3fn;
  const Fp8Recipe recipes[4] = {Fp8Recipe::aiter_like, Fp8Recipe::scaled_p, Fp8Recipe::zyfa, Fp8Recipe::zyfa_exact};
  // Params seen by the FP8 recipes (descales) and by the bf16 row (descales 1, values already scaled).
  AttentionParams p8 = p, p16 = p;
  p8.qkv_dtype = DType::e4m3fn;
  p16.qkv_dtype = DType::bf16;
  p16.q_descale = p16.k_descale = p16.v_descale = 1.0f;
  if (!fp8_in) {
    const float amax[3] = {detail::tensor_amax(p, 0), detail::tensor_amax(p, 1), detail::tensor_amax(p, 2)};
    float* d[3] = {&p8.q_descale, &p8.k_descale, &p8.v_descale};
    for (int w = 0; w < 3; ++w) *d[w] = amax[w] > 0 ? amax[w] / kE4M3fnMax : 1.0f;
  }
  // Descales changed: recompute the one log2-domain logit factor (params.hpp) for each view.
  p8.scale_softmax_log2 = scale_softmax_log2(p8.softmax_scale, p8.q_descale, p8.k_descale);
  p16.scale_softmax_log2 = scale_softmax_log2(p16.softmax_scale, 1.0f, 1.0f);
  detail::ErrorAccumulator acc[5];
  const std::int64_t dv = p.head_dim_v;
  std::vector<double> ref_out(static_cast<std::size_t>(dv)), p_ref, p_test;
  std::vector<float> out16(static_cast<std::size_t>(dv));
  for (std::int64_t b = 0; b < p.batch; ++b)
    for (std::int64_t hk = 0; hk < p.num_heads_k; ++hk) {
      const HeadMatrix k = read_k_head(p, b, hk), v = read_v_head(p, b, hk);
      const HeadMatrix k8 = fp8_in ? k : detail::quantized(k, p8.k_descale);
      const HeadMatrix v8 = fp8_in ? v : detail::quantized(v, p8.v_descale);
      const HeadMatrix k16 = fp8_in ? detail::dequantized_bf16(k, p.k_descale) : k;
      const HeadMatrix v16 = fp8_in ? detail::dequantized_bf16(v, p.v_descale) : v;
      for (std::int64_t h = hk * p.group_size(); h < (hk + 1) * p.group_size(); ++h) {
        const HeadMatrix q = read_q_head(p, b, h);
        const HeadMatrix q8 = fp8_in ? q : detail::quantized(q, p8.q_descale);
        const HeadMatrix q16 = fp8_in ? detail::dequantized_bf16(q, p.q_descale) : q;
        for (std::int64_t i = 0; i < p.seqlen_q; ++i) {
          double ref_lse = 0;
          reference_row(p, q.row(i), k, v, i, ref_out.data(), &ref_lse, &p_ref);
          const std::int64_t n = visible_keys(p, i);
          const std::vector<float> scores = fp8_scores_row(p8, q8.row(i), k8, n);
          for (int r = 0; r < 4; ++r) {
            const Fp8RowOutput o = fp8_row(p8, recipes[r], scores, v8, &p_test);
            acc[r].add_row(ref_out.data(), o.out.data(), dv, p_ref, p_test, ref_lse, o.lse, n > 0);
          }
          float lse16 = 0;
          fp32_attention_row(p16, q16.row(i), k16, v16, i, out16.data(), &lse16, &p_test);
          acc[4].add_row(ref_out.data(), out16.data(), dv, p_ref, p_test, ref_lse, lse16, n > 0);
        }
      }
    }
  std::vector<RecipeError> rows;
  for (int r = 0; r < 4; ++r) rows.push_back(acc[r].result(recipe_name(recipes[r])));
  rows.push_back(acc[4].result("bf16"));
  return rows;
}

/// Error of one FP8 recipe on e4m3fn params `p` against fp64 on the dequantized inputs (the same
/// definitions as fp8_accuracy_report), with Lean P's block max code set to `block_max_code` (zyfa only;
/// the default is the specification's kBlockMaxCode, other values re-measure docs/design/DESIGN.md's finding).
/// Returns a row named "invalid" with NaN errors if p is not e4m3fn.
inline RecipeError fp8_recipe_error(const AttentionParams& p, Fp8Recipe recipe, int block_max_code = -1) {
  if (p.qkv_dtype != DType::e4m3fn) {
    RecipeError bad;
    bad.name = "invalid";
    bad.rel_fro_error = bad.max_abs_error = bad.mean_kl = bad.flushed_mass = bad.max_abs_lse_error = std::nan("");
    return bad;
  }
  detail::ErrorAccumulator acc;
  std::vector<double> ref_out(static_cast<std::size_t>(p.head_dim_v)), p_ref, p_test;
  for_each_query_row(
      p, [&](std::int64_t, std::int64_t, std::int64_t i, const float* q_row, const HeadMatrix& k, const HeadMatrix& v) {
        double ref_lse = 0;
        reference_row(p, q_row, k, v, i, ref_out.data(), &ref_lse, &p_ref);
        const std::int64_t n = visible_keys(p, i);
        const Fp8RowOutput o = fp8_row(p, recipe, fp8_scores_row(p, q_row, k, n), v, &p_test, nullptr, block_max_code);
        acc.add_row(ref_out.data(), o.out.data(), p.head_dim_v, p_ref, p_test, ref_lse, o.lse, n > 0);
      });
  return acc.result(recipe_name(recipe));
}

/// Prints `rows` (from fp8_accuracy_report) as a Markdown table, with each recipe's relative Frobenius
/// error also given as a multiple of aiter_like's (the "x aiter" column; "-" if there is no aiter_like row
/// or its error is 0). `title`, if not empty, is printed first on its own line.
inline void print_accuracy_table(std::ostream& os, const std::vector<RecipeError>& rows,
                                 const std::string& title = "") {
  double aiter = 0;
  for (const RecipeError& r : rows)
    if (r.name == "aiter_like") aiter = r.rel_fro_error;
  if (!title.empty()) os << title << "\n";
  os << "| recipe | rel. Frobenius err | x aiter_like | max abs err | mean KL (nats) | flushed mass | max abs LSE err "
        "|\n"
     << "| --- | --- | --- | --- | --- | --- | --- |\n";
  char buf[256];
  for (const RecipeError& r : rows) {
    char ratio[32] = "-";
    if (aiter > 0) std::snprintf(ratio, sizeof ratio, "%.3f", r.rel_fro_error / aiter);
    std::snprintf(buf, sizeof buf, "| %s | %.4e | %s | %.4e | %.4e | %.3e | %.3e |\n", r.name.c_str(), r.rel_fro_error,
                  ratio, r.max_abs_error, r.mean_kl, r.flushed_mass, r.max_abs_lse_error);
    os << buf;
  }
}

}  // namespace zyfa::host
