// tests/gpu/profile_one.cu -- one zyfa::flash_attn_func call on random bf16 inputs, for profilers (ncu):
//   profile_one <head_dim_qk> <head_dim_v> <causal 0|1> <batch> <seqlen> <num_heads> [repeats]
// bench/run_h200.sh runs it under `ncu --clock-control none`. Exit code != 0 on any error.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <zyfa/flash_attn.hpp>

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: %s dqk dv causal batch seqlen heads [repeats]\n", argv[0]);
    return 2;
  }
  const int dqk = std::atoi(argv[1]), dv = std::atoi(argv[2]), causal = std::atoi(argv[3]);
  const int b = std::atoi(argv[4]), s = std::atoi(argv[5]), h = std::atoi(argv[6]);
  const int reps = argc > 7 ? std::atoi(argv[7]) : 1;
  const size_t nq = static_cast<size_t>(b) * s * h * dqk, nv = static_cast<size_t>(b) * s * h * dv;
  std::vector<std::uint16_t> host(nq);
  std::mt19937 gen(7);
  std::normal_distribution<float> nd;
  for (auto& e : host) {
    const float f = nd(gen);
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    e = static_cast<std::uint16_t>(u >> 16);
  }
  void *q, *k, *v, *o;
  if (cudaMalloc(&q, nq * 2) || cudaMalloc(&k, nq * 2) || cudaMalloc(&v, nv * 2) || cudaMalloc(&o, nv * 2)) return 1;
  cudaMemcpy(q, host.data(), nq * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(k, host.data(), nq * 2, cudaMemcpyHostToDevice);
  cudaMemcpy(v, host.data(), nv * 2, cudaMemcpyHostToDevice);
  using zyfa::TensorRef;
  zyfa::AttentionOptions opt;
  opt.causal = causal != 0;
  for (int r = 0; r < reps; ++r) {
    const zyfa::Status st =
        zyfa::flash_attn_func(TensorRef::contiguous(q, zyfa::DType::bf16, b, s, h, dqk),
                              TensorRef::contiguous(k, zyfa::DType::bf16, b, s, h, dqk),
                              TensorRef::contiguous(v, zyfa::DType::bf16, b, s, h, dv),
                              TensorRef::contiguous(o, zyfa::DType::bf16, b, s, h, dv), nullptr, opt, nullptr);
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.message.c_str());
      return 1;
    }
  }
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("profile_one: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
