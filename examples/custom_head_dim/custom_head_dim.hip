// examples/custom_head_dim/custom_head_dim.hip -- a head-dim pair that is not built in, from ONE template
// instantiation: zyfa::bf16::launch<zyfa::bf16::KernelConfig<DQK, DV, BlockM, BlockN, Warps>>.
//
// Build and run (CMake-free; see README.md here):
//   NVIDIA: nvcc -x cu -std=c++17 -O2 -gencode=arch=compute_90a,code=sm_90a -I../../include custom_head_dim.hip -o chd
//   AMD:    hipcc -std=c++17 -O2 --offload-arch=gfx950 -I../../include custom_head_dim.hip -o chd
//   ./chd      (prints the max error against an fp64 CPU reference; exit code 0 if within tolerance)
// Illegal combinations fail at compile time with a sentence, e.g. KernelConfig<84, 84, 128, 64, 4>:
//   "KernelConfig: head dims must be multiples of 8 elements (...)".
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <zyfa/flash_attn.hpp>

#if ZYFA_PLATFORM_CUDA
#define GPU(x) cuda##x
#else
#define GPU(x) hip##x
#endif

// Every runtime call is checked (errors are values in zyfa; the example does the same).
#define GPU_OK(call)                                   \
  do {                                                 \
    if ((call) != GPU(Success)) {                      \
      std::printf("GPU runtime error in %s\n", #call); \
      return 1;                                        \
    }                                                  \
  } while (0)

// head_dim_qk = 96, head_dim_v = 96, 128 query rows x 64 keys per tile, 4 warps (wave64s on AMD).
using Custom = zyfa::bf16::KernelConfig<96, 96, 128, 64, 4>;

static std::uint16_t to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<std::uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
static double from_bf16(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

int main() {
  const int B = 1, S = 300, H = 2, D = Custom::kDQK, DV = Custom::kDV;
  std::mt19937 gen(1);
  std::normal_distribution<float> nd;
  std::vector<std::uint16_t> q(B * S * H * D), k(q.size()), v(B * S * H * DV), out(v.size());
  for (auto* t : {&q, &k, &v})
    for (auto& e : *t) e = to_bf16(nd(gen));
  void *dq, *dk, *dv, *dout;
  GPU_OK(GPU(Malloc)(&dq, q.size() * 2));
  GPU_OK(GPU(Malloc)(&dk, k.size() * 2));
  GPU_OK(GPU(Malloc)(&dv, v.size() * 2));
  GPU_OK(GPU(Malloc)(&dout, out.size() * 2));
  GPU_OK(GPU(Memcpy)(dq, q.data(), q.size() * 2, GPU(MemcpyHostToDevice)));
  GPU_OK(GPU(Memcpy)(dk, k.data(), k.size() * 2, GPU(MemcpyHostToDevice)));
  GPU_OK(GPU(Memcpy)(dv, v.data(), v.size() * 2, GPU(MemcpyHostToDevice)));
  using zyfa::DType;
  using zyfa::TensorRef;
  zyfa::AttentionOptions opt;
  opt.causal = true;
  zyfa::AttentionParams p;
  zyfa::Status s = zyfa::make_params(TensorRef::contiguous(dq, DType::bf16, B, S, H, D),
                                     TensorRef::contiguous(dk, DType::bf16, B, S, H, D),
                                     TensorRef::contiguous(dv, DType::bf16, B, S, H, DV),
                                     TensorRef::contiguous(dout, DType::bf16, B, S, H, DV), nullptr, opt, &p);
  if (s.ok()) s = zyfa::bf16::launch<Custom>(p, nullptr);
  if (!s.ok()) {
    std::printf("error: %s\n", s.message.c_str());
    return 1;
  }
  GPU_OK(GPU(DeviceSynchronize)());
  GPU_OK(GPU(Memcpy)(out.data(), dout, out.size() * 2, GPU(MemcpyDeviceToHost)));
  // fp64 reference (causal, seqlen_q == seqlen_k).
  double max_err = 0;
  std::vector<double> sc(S);
  for (int h = 0; h < H; ++h)
    for (int i = 0; i < S; ++i) {
      double mx = -1e300, sum = 0;
      for (int j = 0; j <= i; ++j) {
        double a = 0;
        for (int d = 0; d < D; ++d) a += from_bf16(q[(i * H + h) * D + d]) * from_bf16(k[(j * H + h) * D + d]);
        sc[j] = a / std::sqrt(static_cast<double>(D));
        mx = std::max(mx, sc[j]);
      }
      for (int j = 0; j <= i; ++j) sum += (sc[j] = std::exp(sc[j] - mx));
      for (int d = 0; d < DV; ++d) {
        double o = 0;
        for (int j = 0; j <= i; ++j) o += sc[j] / sum * from_bf16(v[(j * H + h) * DV + d]);
        max_err = std::max(max_err, std::fabs(o - from_bf16(out[(i * H + h) * DV + d])));
      }
    }
  std::printf("custom head dims (%d, %d): max |out - fp64 reference| = %.3g\n", D, DV, max_err);
  GPU_OK(GPU(Free)(dq));
  GPU_OK(GPU(Free)(dk));
  GPU_OK(GPU(Free)(dv));
  GPU_OK(GPU(Free)(dout));
  return max_err < 2e-2 ? 0 : 1;
}
