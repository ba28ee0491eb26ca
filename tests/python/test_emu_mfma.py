"""MFMA semantics of the gfx950 emulator: operands are packed here with the lane layouts written out from
gfx950-facts.md §1.2/§1.4 (independently of gfx950emu.mfma), results compared with numpy matmuls in fp64."""
import ml_dtypes
import numpy as np
import pytest

from gfx950emu import EmuError, Semantics
from gfx950emu.snippet import run_snippet

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
RNG = np.random.default_rng(77)
L = np.arange(64)


def pack_lanes(elems, elem_bytes):
    """elems: (64, E) raw codes of elem_bytes each -> (E*elem_bytes/4, 64) uint32 registers."""
    dt = {1: np.uint8, 2: np.uint16}[elem_bytes]
    return np.ascontiguousarray(np.asarray(elems, dt)).view(np.uint32).T.copy()


def k_of(shape, l, e):
    """k index of element e in lane l, per the fact sheet's table."""
    if shape == "32x32x16_bf16":
        return 8 * (l // 32) + e
    if shape == "16x16x32_bf16":
        return 8 * (l // 16) + e
    if shape == "32x32x8_bf16":
        return 4 * (l // 32) + e
    if shape == "32x32x16_fp8":
        return 8 * (l // 32) + e
    if shape == "32x32x64_f8f6f4":
        return 16 * (l // 32) + e if e < 16 else 32 + 16 * (l // 32) + (e - 16)
    raise ValueError(shape)


def cd_pos(dim, r, l):
    if dim == 32:
        return 8 * (r // 4) + 4 * (l // 32) + r % 4, l % 32
    return 4 * (l // 16) + r, l % 16


def operand_regs(mat_codes, shape, dim, E, elem_bytes):
    """mat_codes: dim x K codes (A, or Bᵀ) -> register tuple."""
    lanes = np.zeros((64, E), np.int64)
    for l in range(64):
        for e in range(E):
            lanes[l, e] = mat_codes[l % dim, k_of(shape, l, e)]
    return pack_lanes(lanes, elem_bytes)


def c_regs(C, dim):
    R = 16 if dim == 32 else 4
    regs = np.zeros((R, 64), np.float32)
    for r in range(R):
        for l in range(64):
            regs[r, l] = C[cd_pos(dim, r, l)]
    return regs


def d_matrix(w, base, dim):
    R = 16 if dim == 32 else 4
    D = np.full((dim, dim), np.nan, np.float32)
    for r in range(R):
        for l in range(64):
            D[cd_pos(dim, r, l)] = w.v[base + r][l].view(np.float32)
    return D


BF16_CASES = [("v_mfma_f32_32x32x16_bf16", "32x32x16_bf16", 32, 16, 4),
              ("v_mfma_f32_16x16x32_bf16", "16x16x32_bf16", 16, 32, 4),
              ("v_mfma_f32_32x32x8_bf16", "32x32x8_bf16", 32, 8, 2)]


@pytest.mark.parametrize("mn,shape,dim,K,nreg", BF16_CASES)
@pytest.mark.parametrize("acc", ["v", "a", "zero"])
def test_bf16_mfma(mn, shape, dim, K, nreg, acc):
    A = RNG.standard_normal((dim, K)).astype(ml_dtypes.bfloat16)
    Bt = RNG.standard_normal((dim, K)).astype(ml_dtypes.bfloat16)
    C = RNG.standard_normal((dim, dim)).astype(np.float32) if acc != "zero" else np.zeros((dim, dim), np.float32)
    E = 8 if nreg == 4 else 4
    ra = operand_regs(A.view(np.uint16), shape, dim, E, 2)
    rb = operand_regs(Bt.view(np.uint16), shape, dim, E, 2)
    R = 16 if dim == 32 else 4
    vg = {}
    for j in range(nreg):
        vg[100 + j] = ra[j]
        vg[110 + j] = rb[j]
    cr = c_regs(C, dim)
    for r in range(R):
        vg[(0 if acc == "v" else 256) + r] = cr[r]
    reg = "v" if acc == "v" else "a"
    src_c = f"{reg}[0:{R - 1}]" if acc != "zero" else "0"
    w = run_snippet(f"{mn} {reg}[0:{R - 1}], v[100:{99 + nreg}], v[110:{109 + nreg}], {src_c}", vgprs=vg)
    D = d_matrix(w, 0 if acc == "v" else 256, dim)
    ref = C.astype(np.float64) + A.astype(np.float64) @ Bt.astype(np.float64).T
    np.testing.assert_allclose(D, ref, rtol=0, atol=1e-6 * max(1, np.abs(ref).max()))


def test_legacy_fp8_mfma():
    A = RNG.standard_normal((32, 16)).astype(ml_dtypes.float8_e4m3fn)
    Bt = RNG.standard_normal((32, 16)).astype(ml_dtypes.float8_e5m2)
    ra = operand_regs(A.view(np.uint8), "32x32x16_fp8", 32, 8, 1)
    rb = operand_regs(Bt.view(np.uint8), "32x32x16_fp8", 32, 8, 1)
    w = run_snippet("v_mfma_f32_32x32x16_fp8_bf8 v[0:15], v[100:101], v[110:111], 0",
                    vgprs={100: ra[0], 101: ra[1], 110: rb[0], 111: rb[1]})
    ref = A.astype(np.float64) @ Bt.astype(np.float64).T
    np.testing.assert_allclose(d_matrix(w, 0, 32), ref, rtol=0, atol=1e-6 * np.abs(ref).max())


def _f8f6f4_regs(fa, fb):
    dta = {"fp8": ml_dtypes.float8_e4m3fn, "bf8": ml_dtypes.float8_e5m2}
    A = (RNG.standard_normal((32, 64)) * 4).astype(dta[fa])
    Bt = (RNG.standard_normal((32, 64)) * 4).astype(dta[fb])
    ra = operand_regs(A.view(np.uint8), "32x32x64_f8f6f4", 32, 32, 1)
    rb = operand_regs(Bt.view(np.uint8), "32x32x64_f8f6f4", 32, 32, 1)
    vg = {100 + j: ra[j] for j in range(8)}
    vg.update({110 + j: rb[j] for j in range(8)})
    return A.astype(np.float64), Bt.astype(np.float64), vg


@pytest.mark.parametrize("fa,fb", [("fp8", "fp8"), ("bf8", "fp8"), ("fp8", "bf8")])
def test_f8f6f4_unscaled(fa, fb):
    A, Bt, vg = _f8f6f4_regs(fa, fb)
    C = RNG.standard_normal((32, 32)).astype(np.float32)
    cr = c_regs(C, 32)
    vg.update({r: cr[r] for r in range(16)})
    mods = " ".join(x for x in [f"cbsz:{1 if fa == 'bf8' else 0}" if fa == "bf8" else "",
                                 f"blgp:{1 if fb == 'bf8' else 0}" if fb == "bf8" else ""] if x)
    w = run_snippet(f"v_mfma_f32_32x32x64_f8f6f4 v[0:15], v[100:107], v[110:117], v[0:15] {mods}", vgprs=vg)
    ref = C + A @ Bt.T
    np.testing.assert_allclose(d_matrix(w, 0, 32), ref, rtol=0, atol=1e-6 * np.abs(ref).max())


def _scaled_ref(A, Bt, sa, sb):
    return sum(np.exp2(sa[:, b:b + 1].astype(float) + sb[:, b][None, :].astype(float) - 254)
               * (A[:, 32 * b:32 * b + 32] @ Bt[:, 32 * b:32 * b + 32].T) for b in range(2))


def _scale_regs(s):
    """(32, 2) scale bytes (row, block) -> one VGPR: lane 32*b + m holds s[m, b] in byte 0, junk above."""
    v = np.zeros(64, np.uint32)
    for l in range(64):
        v[l] = int(s[l % 32, l // 32]) | (int(RNG.integers(0, 2 ** 24)) << 8)
    return v


def test_f8f6f4_scaled_lanes_and_blocks():
    A, Bt, vg = _f8f6f4_regs("fp8", "fp8")
    sa = RNG.integers(120, 135, (32, 2)).astype(np.uint8)
    sb = RNG.integers(120, 135, (32, 2)).astype(np.uint8)
    vg[120], vg[121] = _scale_regs(sa), _scale_regs(sb)
    w = run_snippet("v_mfma_scale_f32_32x32x64_f8f6f4 v[0:15], v[100:107], v[110:117], 0, v120, v121", vgprs=vg)
    ref = _scaled_ref(A, Bt, sa, sb)
    D = d_matrix(w, 0, 32)
    np.testing.assert_allclose(D, ref, rtol=0, atol=1e-6 * np.abs(ref).max())
    # negative control: "block = lane half" is a different (wrong) reading and gives a different answer
    assert np.abs(D - _scaled_ref(A, Bt, sa[:, ::-1], sb[:, ::-1])).max() > 1e-3 * np.abs(ref).max()


def test_f8f6f4_scale_switches():
    A, Bt, vg = _f8f6f4_regs("fp8", "fp8")
    sa = np.full((32, 2), 127, np.uint8)
    sa[3, 1] = 255
    vg[120], vg[121] = _scale_regs(sa), _scale_regs(np.full((32, 2), 127, np.uint8))
    body = "v_mfma_scale_f32_32x32x64_f8f6f4 v[0:15], v[100:107], v[110:117], 0, v120, v121"
    D = d_matrix(run_snippet(body, vgprs=vg), 0, 32)
    assert np.isnan(D[3]).all() and np.isfinite(np.delete(D, 3, axis=0)).all()  # 0xFF = NaN (E8M0)
    D2 = d_matrix(run_snippet(body, vgprs=vg, semantics=Semantics(e8m0_ff="exponent")), 0, 32)
    ref = A[3, :32] @ Bt[:, :32].T + 2.0 ** 128 * (A[3, 32:] @ Bt[:, 32:].T)
    np.testing.assert_allclose(D2[3], ref.astype(np.float32), rtol=1e-6)
    # op_sel on scale operands: disputed meaning -> error unless a policy is chosen
    sel = body + " op_sel:[1,0,0]"
    with pytest.raises(EmuError, match="op_sel"):
        run_snippet(sel, vgprs=vg)
    vg[120] = (vg[120] & 0xFF) | (np.uint32(128) << 8)  # byte 1 = 128 (x2)
    D3 = d_matrix(run_snippet(sel, vgprs=vg, semantics=Semantics(mfma_scale_byte="llvm")), 0, 32)
    np.testing.assert_allclose(D3, 2 * (A @ Bt.T), rtol=0, atol=2e-6 * np.abs(A @ Bt.T).max())


def test_fp32_block_accumulation_mode_is_close():
    A, Bt, vg = _f8f6f4_regs("fp8", "fp8")
    body = "v_mfma_f32_32x32x64_f8f6f4 v[0:15], v[100:107], v[110:117], 0"
    D1 = d_matrix(run_snippet(body, vgprs=vg), 0, 32)
    D2 = d_matrix(run_snippet(body, vgprs=vg, semantics=Semantics(mfma_accumulate="fp32_block")), 0, 32)
    ref = A @ Bt.T
    np.testing.assert_allclose(D2, ref, rtol=0, atol=1e-5 * np.abs(ref).max())
    assert np.abs(D1 - ref).max() <= np.abs(D2 - ref).max()


def test_fp32_seq_accumulation_rounds_after_every_product_from_c():
    """fp32_seq: acc = C; acc = fp32(acc + a_k b_k) in k order. 2^24 + 1 + 1: fp64 keeps both ones (one
    rounding of the exact sum), sequential fp32 loses each one against 2^24 (ties to even)."""
    one = 0x3F80
    a = np.zeros((4, 64), np.uint32)
    a[0, :32] = one | (one << 16)  # k = 0, 1 of every row/column = 1.0 (lanes 32-63 hold k 8..15: zero)
    vg = {100 + j: a[j] for j in range(4)}
    vg.update({110 + j: a[j] for j in range(4)})
    c = np.full(64, np.float32(2 ** 24), np.float32).view(np.uint32)
    vg.update({j: c for j in range(16)})
    body = "v_mfma_f32_32x32x16_bf16 v[0:15], v[100:103], v[110:113], v[0:15]"
    d64 = run_snippet(body, vgprs=dict(vg)).v[0][0].view(np.float32)
    dseq = run_snippet(body, vgprs=dict(vg), semantics=Semantics(mfma_accumulate="fp32_seq")).v[0][0].view(np.float32)
    assert d64 == np.float32(2 ** 24 + 2) and dseq == np.float32(2 ** 24)


def test_mfma_operand_errors():
    with pytest.raises(EmuError, match="fp6"):
        run_snippet("v_mfma_f32_32x32x64_f8f6f4 v[0:15], v[100:105], v[110:115], 0 cbsz:2 blgp:2", check=False)
    with pytest.raises(EmuError, match="8-register"):
        run_snippet("v_mfma_f32_32x32x64_f8f6f4 v[0:15], v[100:105], v[110:115], 0", check=False)
    with pytest.raises(EmuError, match="partially overlap"):
        run_snippet("v_mfma_f32_32x32x16_bf16 v[0:15], v[100:103], v[110:113], v[8:23]", check=False)


def test_mfma_under_partial_exec_is_an_error_unless_chosen():
    A, Bt, vg = _f8f6f4_regs("fp8", "fp8")
    body = "v_mfma_f32_32x32x64_f8f6f4 v[0:15], v[100:107], v[110:117], 0"
    with pytest.raises(EmuError, match="EXEC"):
        run_snippet(body, vgprs=vg, exec_mask=(1 << 64) - 2)
    w = run_snippet(body, vgprs=vg, exec_mask=(1 << 64) - 2, semantics=Semantics(mfma_partial_exec="ignore_exec"))
    ref = A @ Bt.T
    np.testing.assert_allclose(d_matrix(w, 0, 32), ref, rtol=0, atol=1e-6 * np.abs(ref).max())
