// zyfa/arch/sm90_mbarrier.hpp -- sm_90 shared-memory mbarriers and named barriers (instruction wrappers only).
//
// Sources: PTX ISA 9.0 §9.7.13.15 (mbarrier: init, arrive, arrive.expect_tx, try_wait.parity; a phase completes
// when its pending arrivals AND its transaction count reach 0, then it re-arms), §9.7.13.4 (fence.mbarrier_init),
// §9.7.13.1 (bar.sync / bar.arrive with a barrier id and a thread count, a multiple of 32). The producer/consumer
// protocol built on them is FlashAttention-3's (Shah et al. 2024, arXiv:2407.08608, §3.1) and is written out in
// bf16/sm90/fwd_kernel_ws.hpp. All addresses are 32-bit .shared-window addresses (smem_addr in arch/sm90.hpp).
// mbarrier objects are 8 bytes, 8-byte aligned. Needs sm_90 (nvcc, any sm_90 target).
#pragma once
#include <cstdint>

#include "../platform/platform.hpp"

#if ZYFA_PLATFORM_CUDA

namespace zyfa::arch::sm90 {

/// mbarrier.init: expects `count` arrivals per phase (phase 0 starts). One thread; then mbarrier_init_fence() and
/// a CTA barrier before any other thread or the TMA engine uses it.
__device__ __forceinline__ void mbarrier_init(std::uint32_t bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
/// fence.mbarrier_init.release.cluster: makes prior mbarrier.init visible to the async proxy (TMA completions).
__device__ __forceinline__ void mbarrier_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
/// One arrival (release semantics, CTA scope).
__device__ __forceinline__ void mbarrier_arrive(std::uint32_t bar) {
  asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
/// Adds `bytes` to the expected transaction count of the current phase, then one arrival (the TMA copies that
/// name this barrier complete the bytes).
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
/// Upper bound (ns) of one try_wait's suspension, its suspendTimeHint (PTX ISA 9.0 §9.7.13.15, mbarrier.try_wait):
/// the waiting thread sleeps until the phase completes or this time passes. Without it the wait compiles to a
/// YIELD / TRYWAIT spin that issues an instruction every few tens of cycles from an idle producer warp, taking issue
/// slots from the consumer warps on the same scheduler; 10 ms is CUTLASS's value (cutlass/arch/barrier.h).
constexpr std::uint32_t kMbarrierSuspendHintNs = 0x989680;
/// Blocks until the phase with parity `parity` (0 or 1) has completed (acquire: the phase's TMA data and the
/// writes released by its arrivals are visible afterwards). The waiter must not be two phases behind.
__device__ __forceinline__ void mbarrier_wait(std::uint32_t bar, std::uint32_t parity) {
  asm volatile(
      "{\n"
      " .reg .pred done;\n"
      "WAIT_%=:\n"
      " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1, %2;\n"
      " @!done bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity), "r"(kMbarrierSuspendHintNs)
      : "memory");
}

/// bar.sync id, count: waits until `count` threads (multiple of 32, the caller's warps included) arrived on named
/// barrier `id` (1..15; 0 is __syncthreads). Orders shared-memory accesses among the participants.
__device__ __forceinline__ void named_barrier_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
/// barrier.sync id, count (not .aligned): named_barrier_sync for warps that reach the barrier at different
/// instructions (warp-specialized code: bar.sync is barrier.sync.aligned, which expects every participant at the same
/// instruction; PTX ISA 9.0 §9.7.13.1, barrier.cta).
__device__ __forceinline__ void named_barrier_sync_unaligned(int id, int count) {
  asm volatile("barrier.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
/// bar.arrive id, count: arrives on named barrier `id` without waiting.
__device__ __forceinline__ void named_barrier_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

/// bar.red.or.pred id, count, pred: bar.sync that also returns, in every participant, whether `pred` was true in any
/// of them (PTX ISA 9.0 §9.7.13.1, barrier.cta.red; same memory ordering among the participants as bar.sync).
__device__ __forceinline__ bool named_barrier_sync_or(int id, int count, bool pred) {
  std::uint32_t any;
  asm volatile(
      "{\n"
      " .reg .pred p, q;\n"
      " setp.ne.u32 p, %1, 0;\n"
      " bar.red.or.pred q, %2, %3, p;\n"
      " selp.u32 %0, 1, 0, q;\n"
      "}\n"
      : "=r"(any)
      : "r"(static_cast<std::uint32_t>(pred)), "r"(id), "r"(count)
      : "memory");
  return any != 0;
}

/// fence.proxy.async.shared::cta: orders this thread's prior generic-proxy shared-memory writes before later
/// async-proxy reads (wgmma operands, TMA stores) once a barrier publishes them (PTX §9.7.15.7.1, §9.7.9.25.2).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

}  // namespace zyfa::arch::sm90

#endif  // ZYFA_PLATFORM_CUDA
