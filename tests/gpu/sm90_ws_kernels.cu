// tests/gpu/sm90_ws_kernels.cu -- compiles the sm_90a warp-specialized BF16 kernel (bf16/sm90/) for every built-in
// head-dim pair, so that tools/ci/compile_device.sh reports its registers and fails on any spill (sm_90a only).
#include <zyfa/bf16/sm90/launch_ws.hpp>
#include <zyfa/head_dims.hpp>

#define ZYFA_WS_INSTANTIATE_(DQK, DV)                                                               \
  template zyfa::Status zyfa::bf16::sm90ws::launch_builtin_ws<DQK, DV>(                             \
      const zyfa::AttentionParams&, zyfa::rt::stream_t, bool*, const zyfa::bf16::sm90ws::WsOrder&); \
  template zyfa::Status                                                                             \
  zyfa::bf16::sm90ws::launch_builtin_ws<DQK, DV, zyfa::bf16::sm90ws::WsSchedule::persistent_snake>( \
      const zyfa::AttentionParams&, zyfa::rt::stream_t, bool*, const zyfa::bf16::sm90ws::WsOrder&);
ZYFA_BUILTIN_HEAD_DIMS(ZYFA_WS_INSTANTIATE_)
#undef ZYFA_WS_INSTANTIATE_
