// Consumer of an installed zyfa: a plain host translation unit that includes the umbrella header and
// builds/validates AttentionParams with make_params. Exit status 0 only if a valid call succeeds and an
// invalid one fails with a message naming the argument.
#include <zyfa/zyfa.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
  static_assert(ZYFA_PLATFORM_HOST == 1, "a plain C++ compiler must select the host platform");
  // q [1, 64, 4, 128], k/v [1, 64, 2, 128] (GQA 2:1), out [1, 64, 4, 128], all bf16 (storage only).
  alignas(16) static std::uint16_t q[64 * 4 * 128], k[64 * 2 * 128], v[64 * 2 * 128], o[64 * 4 * 128];
  alignas(16) static float lse[4 * 64];
  using zyfa::DType;
  using zyfa::TensorRef;
  const TensorRef tq = TensorRef::contiguous(q, DType::bf16, 1, 64, 4, 128);
  const TensorRef tk = TensorRef::contiguous(k, DType::bf16, 1, 64, 2, 128);
  const TensorRef tv = TensorRef::contiguous(v, DType::bf16, 1, 64, 2, 128);
  const TensorRef to = TensorRef::contiguous(o, DType::bf16, 1, 64, 4, 128);
  zyfa::AttentionOptions opt;
  opt.causal = true;
  zyfa::AttentionParams p;
  const zyfa::Status s = zyfa::make_params(tq, tk, tv, to, lse, opt, &p);
  if (!s.ok()) {
    std::fprintf(stderr, "make_params failed: %s\n", s.message.c_str());
    return 1;
  }
  if (p.group_size() != 2 || p.head_dim_qk != 128 || !p.causal) {
    std::fprintf(stderr, "make_params filled unexpected values\n");
    return 1;
  }
  // head_dim mismatch between q and k must be rejected, naming k.
  const TensorRef bad_k = TensorRef::contiguous(k, DType::bf16, 1, 64, 2, 64);
  const zyfa::Status e = zyfa::make_params(tq, bad_k, tv, to, lse, opt, &p);
  if (e.ok() || e.message.rfind("k:", 0) != 0) {
    std::fprintf(stderr, "expected an error naming k, got '%s'\n", e.message.c_str());
    return 1;
  }
  std::printf("zyfa consumer OK: group_size=%lld softmax_scale=%g; rejected: %s\n",
              static_cast<long long>(p.group_size()), static_cast<double>(p.softmax_scale), e.message.c_str());
  return 0;
}
