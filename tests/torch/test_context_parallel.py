"""The context-parallel example (examples/context_parallel/cp_prefill.py): ring attention with zigzag load balancing
and zyfa.merge_attn_states gives the one-call result. CPU with the gloo backend (2 and 3 ranks, the host backend) in
CI; 2 GPUs with NCCL at 32K tokens when two CUDA devices are present (tests/gpu/run_python_gpu.sh)."""
import json
import os
import pathlib
import subprocess
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "context_parallel" / "cp_prefill.py"


def run_example(args, timeout):
    env = dict(os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    r = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    print(r.stdout[-4000:])
    assert r.returncode == 0, r.stdout[-4000:]
    assert "CHECK OK" in r.stdout
    return r.stdout


@pytest.mark.parametrize("world,seqlen", [(2, 256), (3, 384)])
def test_context_parallel_cpu_gloo(world, seqlen, tmp_path):
    run_example([str(EXAMPLE), "--device", "cpu", "--world", str(world), "--seqlen", str(seqlen), "--heads", "4",
                 "--kv-heads", "2", "--head-dim", "64", "--check", "--out", str(tmp_path / "cp.json")], timeout=600)
    res = json.loads((tmp_path / "cp.json").read_text())
    assert res["check"] and res["lse_max_abs_err"] < 1e-4


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2, reason="needs 2 CUDA devices")
def test_context_parallel_two_gpus_32k(tmp_path):
    out = os.environ.get("ZYFA_CP_OUT", str(tmp_path / "cp_2gpu.json"))
    run_example(["-m", "torch.distributed.run", "--nproc-per-node", "2", str(EXAMPLE), "--seqlen", "32768",
                 "--check", "--bench", "--out", out], timeout=900)
    res = json.loads(pathlib.Path(out).read_text())
    assert res["check"]
