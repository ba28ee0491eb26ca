// bench/zyfa_torch_ext.cpp -- PyTorch binding of the benchmark extension (built on the GPU machine by
// torch.utils.cpp_extension.load in bench/bench_h200.py). Only torch tensors -> raw pointers here; the zyfa
// call is in zyfa_torch_ext_kernel.cu (compiled by nvcc).
#include <torch/extension.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

// Defined in zyfa_torch_ext_kernel.cu. Returns an empty string on success, else zyfa's status message.
std::string zyfa_ext_forward(void* q, const std::int64_t* q_shape, const std::int64_t* q_stride, void* k,
                             const std::int64_t* k_shape, const std::int64_t* k_stride, void* v,
                             const std::int64_t* v_shape, const std::int64_t* v_stride, void* out,
                             const std::int64_t* o_shape, const std::int64_t* o_stride, float* lse, bool causal,
                             std::int64_t stream);

// Defined in zyfa_torch_ext_variants.cu (tile-size variants of the sm_90 kernel).
int zyfa_ext_num_variants();
std::vector<int> zyfa_ext_variant_desc(int i);
std::string zyfa_ext_forward_variant(int idx, void* q, const std::int64_t* q_shape, const std::int64_t* q_stride,
                                     void* k, const std::int64_t* k_shape, const std::int64_t* k_stride, void* v,
                                     const std::int64_t* v_shape, const std::int64_t* v_stride, void* out,
                                     const std::int64_t* o_shape, const std::int64_t* o_stride, float* lse, bool causal,
                                     std::int64_t stream);

/// q, k, v, out: CUDA bf16 tensors in BSHD order (any strides with a contiguous last dim); lse: fp32
/// [b, h, sq] contiguous or None; stream: torch.cuda.current_stream().cuda_stream.
/// variant: -1 = zyfa::flash_attn_func (built-in dispatch), else a tile variant index.
void forward_impl(int variant, torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor out,
                  c10::optional<torch::Tensor> lse, bool causal, std::int64_t stream) {
  for (auto* t : {&q, &k, &v, &out}) {
    TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kBFloat16 && t->dim() == 4, "zyfa: bf16 CUDA BSHD tensors");
  }
  float* lse_ptr = nullptr;
  if (lse.has_value()) {
    TORCH_CHECK(lse->scalar_type() == torch::kFloat32 && lse->is_contiguous(), "zyfa: lse fp32 contiguous");
    lse_ptr = lse->data_ptr<float>();
  }
  std::int64_t sh[4][4], st[4][4];
  torch::Tensor* ts[4] = {&q, &k, &v, &out};
  for (int i = 0; i < 4; ++i)
    for (int d = 0; d < 4; ++d) {
      sh[i][d] = ts[i]->size(d);
      st[i][d] = ts[i]->stride(d);
    }
  const std::string err =
      variant < 0
          ? zyfa_ext_forward(q.data_ptr(), sh[0], st[0], k.data_ptr(), sh[1], st[1], v.data_ptr(), sh[2], st[2],
                             out.data_ptr(), sh[3], st[3], lse_ptr, causal, stream)
          : zyfa_ext_forward_variant(variant, q.data_ptr(), sh[0], st[0], k.data_ptr(), sh[1], st[1], v.data_ptr(),
                                     sh[2], st[2], out.data_ptr(), sh[3], st[3], lse_ptr, causal, stream);
  TORCH_CHECK(err.empty(), "zyfa: ", err);
}

void forward(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor out, c10::optional<torch::Tensor> lse,
             bool causal, std::int64_t stream) {
  forward_impl(-1, q, k, v, out, lse, causal, stream);
}
void forward_variant(int variant, torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor out,
                     c10::optional<torch::Tensor> lse, bool causal, std::int64_t stream) {
  forward_impl(variant, q, k, v, out, lse, causal, stream);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("forward", &forward, "zyfa BF16 flash attention forward (BSHD)");
  m.def("forward_variant", &forward_variant, "a tile-size variant of the sm_90 kernel");
  m.def("num_variants", &zyfa_ext_num_variants);
  m.def("variant_desc", &zyfa_ext_variant_desc);
}
