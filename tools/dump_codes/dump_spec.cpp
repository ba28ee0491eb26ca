// dump_spec -- runs one recipe of zyfa's FP8 host specification (include/zyfa/host/fp8_spec.hpp) on a
// problem read from a file, for tests/python/test_host_spec.py, which compares it with an independent
// numpy implementation written from DESIGN.md.
//
//   dump_spec <recipe> <in.bin> <out.bin>      recipe: any name of zyfa::host::recipe_name
// in.bin (little endian): int64 batch, seqlen_q, seqlen_k, num_heads, num_heads_k, head_dim_qk, head_dim_v,
//   causal; float32 softmax_scale, q_descale, k_descale, v_descale; then q, k, v as e4m3fn codes (uint8),
//   dense BSHD.
// out.bin: float32 out [b, seqlen_q, num_heads, head_dim_v]; float32 lse [b, num_heads, seqlen_q];
//   uint8 codes [b, num_heads, seqlen_q, seqlen_k] (the P codes fed to P.V; 0 for masked keys).
// Built by the pytest with the host compiler (g++ -std=c++17 -O2 -ffp-contract=off -Iinclude).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>
#include <zyfa/zyfa.hpp>

int main(int argc, char** argv) {
  using zyfa::host::Fp8Recipe;
  if (argc != 4) {
    std::fprintf(stderr, "usage: dump_spec <recipe> <in.bin> <out.bin>\n");
    return 2;
  }
  Fp8Recipe recipe = Fp8Recipe::zyfa;
  int found = 0;
  for (Fp8Recipe r : zyfa::host::kAllFp8Recipes)
    if (std::strcmp(argv[1], zyfa::host::recipe_name(r)) == 0) recipe = r, found = 1;
  if (!found) {
    std::fprintf(stderr, "dump_spec: unknown recipe '%s'\n", argv[1]);
    return 2;
  }
  std::FILE* f = std::fopen(argv[2], "rb");
  if (!f) return std::perror(argv[2]), 1;
  std::int64_t hdr[8];
  float sc[4];
  if (std::fread(hdr, 8, 8, f) != 8 || std::fread(sc, 4, 4, f) != 4) return std::fprintf(stderr, "short header\n"), 1;
  const std::int64_t B = hdr[0], SQ = hdr[1], SK = hdr[2], H = hdr[3], HK = hdr[4], DQK = hdr[5], DV = hdr[6];
  std::vector<std::uint8_t> q(B * SQ * H * DQK + 16), k(B * SK * HK * DQK + 16), v(B * SK * HK * DV + 16);
  if (std::fread(q.data(), 1, B * SQ * H * DQK, f) != size_t(B * SQ * H * DQK) ||
      std::fread(k.data(), 1, B * SK * HK * DQK, f) != size_t(B * SK * HK * DQK) ||
      std::fread(v.data(), 1, B * SK * HK * DV, f) != size_t(B * SK * HK * DV))
    return std::fprintf(stderr, "short data\n"), 1;
  std::fclose(f);
  std::vector<std::uint16_t> out(B * SQ * H * DV);
  zyfa::AttentionOptions opt;
  opt.causal = hdr[7] != 0;
  opt.softmax_scale = sc[0];
  opt.q_descale = sc[1], opt.k_descale = sc[2], opt.v_descale = sc[3];
  using zyfa::DType;
  using zyfa::TensorRef;
  zyfa::AttentionParams p;
  const zyfa::Status st =
      zyfa::make_params(TensorRef::contiguous(q.data(), DType::e4m3fn, B, SQ, H, DQK),
                        TensorRef::contiguous(k.data(), DType::e4m3fn, B, SK, HK, DQK),
                        TensorRef::contiguous(v.data(), DType::e4m3fn, B, SK, HK, DV),
                        TensorRef::contiguous(out.data(), DType::bf16, B, SQ, H, DV), nullptr, opt, &p);
  if (!st) return std::fprintf(stderr, "dump_spec: %s\n", st.message.c_str()), 1;
  zyfa::host::Fp8Output o;
  if (!zyfa::host::fp8_attention(p, recipe, &o)) return 1;
  std::vector<std::uint8_t> codes(B * H * SQ * SK, 0);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h) {
      const auto qm = zyfa::host::read_q_head(p, b, h);
      const auto km = zyfa::host::read_k_head(p, b, h / p.group_size());
      const auto vm = zyfa::host::read_v_head(p, b, h / p.group_size());
      for (std::int64_t i = 0; i < SQ; ++i) {
        zyfa::host::Fp8RowTrace tr;
        zyfa::host::fp8_row(p, recipe, zyfa::host::fp8_scores_row(p, qm.row(i), km, zyfa::host::visible_keys(p, i)), vm,
                            nullptr, &tr);
        std::memcpy(&codes[((b * H + h) * SQ + i) * SK], tr.codes.data(), SK);
      }
    }
  f = std::fopen(argv[3], "wb");
  if (!f) return std::perror(argv[3]), 1;
  std::fwrite(o.out_f32.data(), 4, o.out_f32.size(), f);
  std::fwrite(o.lse.data(), 4, o.lse.size(), f);
  std::fwrite(codes.data(), 1, codes.size(), f);
  std::fclose(f);
  return 0;
}
