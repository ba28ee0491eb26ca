#!/usr/bin/env python3
"""Context-parallel causal prefill with zyfa over torch.distributed: ring attention, zigzag load balancing, LSE merge.

The sequence of N tokens is cut into 2W chunks for W ranks; rank r holds chunks r and 2W-1-r (zigzag: every rank
gets one early and one late chunk, so the causal work is the same on every rank). Each rank keeps its query chunks
and passes its key/value chunks around the ring (rank r sends to r+1, receives from r-1; the transfer of the next
block overlaps the attention of the current one). At ring step s a rank holds the K/V of rank src = (r - s) mod W:
  s = 0 (its own):    causal attention of its two query chunks on its two key chunks (their concatenation keeps
                      the global order, so the causal mask of the concatenation is the global one);
  src < r:            both query chunks see all of src's first chunk and none of its second: non-causal attention
                      on the first key chunk;
  src > r:            only the second (late) query chunk sees anything, all of src's two chunks: non-causal.
Each step gives a partial output and its softmax LSE; zyfa.merge_attn_states folds it into an fp32 accumulator
(exact up to fp32 rounding). zyfa provides the kernel and the merge; the engine is plain torch.distributed.

  # 2 GPUs (NCCL), check against one GPU and time it:
  python3 -m torch.distributed.run --nproc-per-node 2 examples/context_parallel/cp_prefill.py --seqlen 32768 --check --bench
  # CPU (gloo, zyfa's host backend; spawns the ranks itself):
  python3 examples/context_parallel/cp_prefill.py --device cpu --world 2 --seqlen 512 --heads 4 --kv-heads 2 --check

--check: rank 0 runs zyfa.flash_attn_func on the whole sequence and compares (prints "CHECK OK" or fails).
--bench: times the context-parallel forward (communication included) and the one-device call on rank 0, prints
TFLOP/s per device (causal FLOPs: 2 * 2 * batch * heads * N^2 / 2 * head_dim) and writes --out (JSON).
"""
import argparse
import json
import math
import os
import socket
import sys
import time

import torch
import torch.distributed as dist

import zyfa


def zigzag(x, world, rank, dim=1):
    """Rank `rank`'s share of x along `dim`: chunks rank and 2*world-1-rank of 2*world, concatenated."""
    chunks = x.chunk(2 * world, dim=dim)
    return torch.cat([chunks[rank], chunks[2 * world - 1 - rank]], dim=dim)


def unzigzag(shards, world, dim=1):
    """Inverse of zigzag over the list of all ranks' shards: the full tensor in sequence order."""
    chunks = [None] * (2 * world)
    for r, s in enumerate(shards):
        a, b = s.chunk(2, dim=dim)
        chunks[r], chunks[2 * world - 1 - r] = a, b
    return torch.cat(chunks, dim=dim)


def ring_attention(q, k, v, group=None):
    """Causal attention of this rank's zigzag shard. q [b, 2C, h, d], k/v [b, 2C, hk, d*] (chunks r and 2W-1-r).
    Returns out [b, 2C, h, dv] bf16 and lse [b, h, 2C] fp32 (natural log) of these query rows over the whole
    sequence's keys."""
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    c = q.shape[1] // 2
    nxt, prv = (rank + 1) % world, (rank - 1) % world
    kv = torch.cat([k.flatten(2), v.flatten(2)], dim=2).contiguous()  # one buffer per transfer
    kd = k.shape[2] * k.shape[3]
    out = lse = None
    for step in range(world):
        reqs = []
        if step + 1 < world:  # start passing the current block on; it overlaps this step's attention
            recv = torch.empty_like(kv)
            reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, kv, nxt, group),
                                           dist.P2POp(dist.irecv, recv, prv, group)])
        kc = kv[:, :, :kd].unflatten(2, k.shape[2:])
        vc = kv[:, :, kd:].unflatten(2, v.shape[2:])
        src = (rank - step) % world
        if step == 0:
            o, l = zyfa.flash_attn_func(q, kc, vc, causal=True, return_attn_probs=True)
            out, lse = o.float(), l
        elif src < rank:
            o, l = zyfa.flash_attn_func(q, kc[:, :c], vc[:, :c], return_attn_probs=True)
            out, lse = zyfa.merge_attn_states(out, lse, o, l)
        else:
            o, l = zyfa.flash_attn_func(q[:, c:], kc, vc, return_attn_probs=True)
            m, lm = zyfa.merge_attn_states(out[:, c:], lse[:, :, c:], o, l)
            out[:, c:], lse[:, :, c:] = m, lm
        for r in reqs:
            r.wait()
        if step + 1 < world:
            kv = recv
    return out.to(torch.bfloat16), lse


def make_inputs(args, device):
    g = torch.Generator(device="cpu").manual_seed(1234)  # the same full tensors on every rank
    shape_q = (args.batch, args.seqlen, args.heads, args.head_dim)
    shape_kv = (args.batch, args.seqlen, args.kv_heads, args.head_dim)
    q, k, v = (torch.randn(s, generator=g).to(torch.bfloat16).to(device) for s in (shape_q, shape_kv, shape_kv))
    return q, k, v


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, device, iters):
    fn()
    sync(device)
    t = time.perf_counter()
    for _ in range(iters):
        fn()
    sync(device)
    return (time.perf_counter() - t) / iters


def run(args):
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.device == "cuda":
        local = int(os.environ.get("LOCAL_RANK", rank))
        torch.cuda.set_device(local)
        device = torch.device("cuda", local)
    else:
        device = torch.device("cpu")
    if args.seqlen % (2 * world):
        raise ValueError(f"--seqlen {args.seqlen} must be a multiple of 2 * world size ({2 * world})")
    q, k, v = make_inputs(args, device)
    ql, kl, vl = (zigzag(t, world, rank) for t in (q, k, v))
    out, lse = ring_attention(ql, kl, vl)
    result = {"world": world, "seqlen": args.seqlen, "batch": args.batch, "heads": args.heads,
              "kv_heads": args.kv_heads, "head_dim": args.head_dim, "device": str(device)}
    if args.check:
        outs = [torch.empty_like(out) for _ in range(world)]
        lses = [torch.empty_like(lse) for _ in range(world)]
        dist.all_gather(outs, out.contiguous())
        dist.all_gather(lses, lse.contiguous())
        if rank == 0:
            full_out, full_lse = unzigzag(outs, world, 1), unzigzag(lses, world, 2)
            ref, ref_lse = zyfa.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)
            err = (full_out.float() - ref.float()).abs().max().item()
            rel = ((full_out.float() - ref.float()).norm() / ref.float().norm()).item()
            lse_err = (full_lse - ref_lse).abs().max().item()
            result.update(max_abs_err=err, rel_fro_err=rel, lse_max_abs_err=lse_err)
            print(f"check: context-parallel ({world} ranks) vs one call: max |out diff| {err:.3e}, relative "
                  f"Frobenius {rel:.3e}, max |lse diff| {lse_err:.3e}", flush=True)
            # partial outputs are bf16 (the kernel's output type), merged in fp32: a few bf16 ulps at most
            ok = torch.allclose(full_out.float(), ref.float(), atol=2e-2, rtol=2e-2) and lse_err < 1e-4
            print("CHECK OK" if ok else "CHECK FAILED", flush=True)
            result["check"] = bool(ok)
            if not ok:
                raise SystemExit(1)
    if args.bench:
        flops = 4.0 * args.batch * args.heads * args.seqlen * args.seqlen / 2 * args.head_dim
        dist.barrier()
        t_cp = timed(lambda: ring_attention(ql, kl, vl), device, args.iters)
        dist.barrier()
        t_one = None
        if rank == 0:
            t_one = timed(lambda: zyfa.flash_attn_func(q, k, v, causal=True), device, args.iters)
        dist.barrier()
        if rank == 0:
            result.update(cp_ms=t_cp * 1e3, one_ms=t_one * 1e3,
                          cp_tflops_per_device=flops / t_cp / world / 1e12, one_tflops=flops / t_one / 1e12)
            print(f"bench: {world} ranks {t_cp * 1e3:.2f} ms ({flops / t_cp / world / 1e12:.1f} TFLOP/s per device), "
                  f"one device {t_one * 1e3:.2f} ms ({flops / t_one / 1e12:.1f} TFLOP/s); speedup "
                  f"{t_one / t_cp:.2f}x on {world}", flush=True)
    if rank == 0 and args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)


def _spawned(rank, world, port, args):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank))
    dist.init_process_group(args.backend, rank=rank, world_size=world)
    try:
        run(args)
        dist.barrier()  # every rank done (its sends received) before any tears the group down
    finally:
        dist.destroy_process_group()
    # Leave without the interpreter's teardown: gloo's background threads, still joinable when the C++ statics are
    # destroyed at exit, abort a rank now and then ("terminate called without an active exception", SIGABRT) after
    # its work is done and checked. An exception above still reaches torch.multiprocessing.spawn as a failure.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--backend", default=None, help="nccl (cuda) or gloo (cpu) by default")
    p.add_argument("--world", type=int, default=2, help="ranks to spawn when not started by torch.distributed.run")
    p.add_argument("--seqlen", type=int, default=32768)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--check", action="store_true")
    p.add_argument("--bench", action="store_true")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--out", default=None, help="JSON result file (rank 0)")
    args = p.parse_args(argv)
    args.backend = args.backend or ("nccl" if args.device == "cuda" else "gloo")
    if "RANK" in os.environ:  # started by torch.distributed.run
        dist.init_process_group(args.backend)
        try:
            run(args)
            dist.barrier()  # every rank done (its sends received) before any tears the group down
        finally:
            dist.destroy_process_group()
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torch.multiprocessing.spawn(_spawned, args=(args.world, port, args), nprocs=args.world, join=True)


if __name__ == "__main__":
    sys.exit(main())
