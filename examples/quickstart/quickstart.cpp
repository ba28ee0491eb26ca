// The smallest complete zyfa program: causal GQA attention on the host backend (no GPU needed).
// Build: g++ -std=c++17 -O2 -I include examples/quickstart/quickstart.cpp -o quickstart && ./quickstart
// On a GPU build (nvcc / hipcc), allocate device memory and call zyfa::flash_attn_func(..., stream) instead of
// zyfa::host::flash_attn_func: the arguments are the same.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>
#include <zyfa/zyfa.hpp>

int main() {
  const int b = 1, seqlen_q = 256, seqlen_k = 256, num_heads = 8, num_heads_k = 2, head_dim = 64;
  // bf16 tensors are arrays of std::uint16_t bit patterns, BSHD, contiguous.
  std::vector<std::uint16_t> q(b * seqlen_q * num_heads * head_dim), k(b * seqlen_k * num_heads_k * head_dim),
      v(k.size()), out(q.size());
  std::mt19937 rng(0);
  std::normal_distribution<float> normal;
  for (auto* t : {&q, &k, &v})
    for (auto& x : *t) x = zyfa::float_to_bf16(normal(rng));
  std::vector<float> lse(b * num_heads * seqlen_q);  // fp32 [b, num_heads, seqlen_q], natural log

  using zyfa::DType;
  using zyfa::TensorRef;
  const TensorRef tq = TensorRef::contiguous(q.data(), DType::bf16, b, seqlen_q, num_heads, head_dim);
  const TensorRef tk = TensorRef::contiguous(k.data(), DType::bf16, b, seqlen_k, num_heads_k, head_dim);
  const TensorRef tv = TensorRef::contiguous(v.data(), DType::bf16, b, seqlen_k, num_heads_k, head_dim);
  const TensorRef to = TensorRef::contiguous(out.data(), DType::bf16, b, seqlen_q, num_heads, head_dim);
  zyfa::AttentionOptions opt;  // softmax_scale defaults to 1/sqrt(head_dim)
  opt.causal = true;           // bottom-right aligned (FlashAttention >= 2.1)

  const zyfa::Status s = zyfa::host::flash_attn_func(tq, tk, tv, to, lse.data(), opt);
  if (!s) {
    std::fprintf(stderr, "zyfa: %s\n", s.message.c_str());  // errors are values naming the argument
    return 1;
  }
  // Query row 0 sees only key 0, so its output is v[0] of its key/value head, and its LSE is q0·k0·scale.
  std::printf("out[0,0,0,:4] = %g %g %g %g   lse[0,0,0] = %g\n", zyfa::bf16_to_float(out[0]),
              zyfa::bf16_to_float(out[1]), zyfa::bf16_to_float(out[2]), zyfa::bf16_to_float(out[3]), lse[0]);
  std::printf("v[0,0,0,:4]   = %g %g %g %g\n", zyfa::bf16_to_float(v[0]), zyfa::bf16_to_float(v[1]),
              zyfa::bf16_to_float(v[2]), zyfa::bf16_to_float(v[3]));
  const bool ok = out[0] == v[0] && out[1] == v[1] && std::isfinite(lse[0]);
  std::printf("%s\n", ok ? "quickstart: OK" : "quickstart: MISMATCH");
  return ok ? 0 : 1;
}
