// python/zyfa/csrc/instantiate.cu -- one built-in BF16 head-dim pair per translation unit (setup.py compiles this file
// once per pair of include/zyfa/head_dims.hpp with -DZYFA_DQK=.. -DZYFA_DV=.., in parallel); capi.cpp is compiled
// with -DZYFA_SEPARATE_INSTANTIATION and so does not compile the kernels itself.
#include <zyfa/bf16/builtin.hpp>

ZYFA_BF16_INSTANTIATE(ZYFA_DQK, ZYFA_DV)
