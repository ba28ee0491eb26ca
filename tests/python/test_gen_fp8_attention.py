"""The generated gfx950 FP8 attention kernels (asm/zyfa_fp8_fwd_d128_m32.s, head dims (128, 128), and
asm/zyfa_fp8_fwd_d192_dv128_m32.s, MLA (192, 128)) in the emulator against the C++ FP8 specification (zyfa
recipe): every output element and LSE, bit for bit under the specification's MFMA summation order (fp32_seq),
within the stated bound under the other two orders. The comparison rules are in
fp8_attention_case.py; the fuller set is tools/verify_fp8_gfx950.py (results in docs/fp8-gfx950.md)."""
import zlib

import numpy as np
import pytest

import fp8_attention_case as fc

SHAPES = [  # name, batch, seqlen_q, seqlen_k, heads, kv heads, causal, pad
    ("one_row", 1, 1, 1, 1, 1, True, 0),
    ("tail17_causal", 1, 17, 17, 1, 1, True, 0),
    ("q63_k65_gqa2_causal", 1, 63, 65, 2, 1, True, 0),
    ("q65_k63_masked_rows", 1, 65, 63, 1, 1, True, 0),
    ("q33_k129_mqa8_batch2", 2, 33, 129, 8, 1, False, 0),
    ("q129_k127_strided_causal", 1, 129, 127, 2, 2, True, 16),
    ("q100_k17_group3", 1, 100, 17, 3, 1, False, 0),
    ("q40_k200_causal_gqa2", 1, 40, 200, 4, 2, True, 0),
]


MLA_SHAPES = [  # head dims (192, 128): the QK^T K loop runs 3 MFMAs of 64 dims per 32-key tile
    ("mla_one_row", 1, 1, 1, 1, 1, True, 0),
    ("mla_q65_k63_masked_rows", 1, 65, 63, 1, 1, True, 0),
    ("mla_q33_k129_mqa4_batch2_strided", 2, 33, 129, 4, 1, False, 16),
    ("mla_q40_k200_causal_gqa2", 1, 40, 200, 4, 2, True, 0),
]


@pytest.mark.parametrize("shape", SHAPES, ids=[s[0] for s in SHAPES])
def test_attention_matches_the_specification_bit_for_bit(shape):
    name, b, sq, sk, h, hk, causal, pad = shape
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    c = fc.random_case(name, rng, b, sq, sk, h, hk, causal, pad=pad)
    st = fc.check(c)
    assert st["bit_exact"]
    if name == "q65_k63_masked_rows":
        assert st["lse_neginf"] == 2  # rows 0 and 1 see no key: out exactly 0 (checked bitwise), lse -inf


@pytest.mark.parametrize("shape", MLA_SHAPES, ids=[s[0] for s in MLA_SHAPES])
def test_mla_matches_the_specification_bit_for_bit(shape):
    name, b, sq, sk, h, hk, causal, pad = shape
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    c = fc.random_case(name, rng, b, sq, sk, h, hk, causal, pad=pad, dqk=192, dv=128)
    assert c.kernel == "zyfa_fp8_fwd_d192_dv128_m32" and c.scale == pytest.approx(192 ** -0.5)
    st = fc.check(c)
    assert st["bit_exact"]
    if name == "mla_q65_k63_masked_rows":
        assert st["lse_neginf"] == 2


def test_mla_reads_head_dims_128_to_191():
    """Dims 128..191 of q and k alone decide the result: zero q's first 128 dims, so only the third MFMA of the
    K loop contributes to S (a kernel that stopped at 128 dims would see S == 0 and a uniform softmax)."""
    rng = np.random.default_rng(11)
    c = fc.random_case("mla_high_dims", rng, 1, 32, 100, 1, 1, False, dqk=192, dv=128, q_gain=4.0)
    c.q[..., :128] = 0
    want_out, want_lse = fc.run_spec(c)
    uniform = fc.random_case("mla_high_dims", np.random.default_rng(11), 1, 32, 100, 1, 1, False, dqk=192,
                             dv=128, q_gain=4.0)
    uniform.q[:] = 0
    u_out, _ = fc.run_spec(uniform)
    assert not np.array_equal(want_out, u_out)
    got_out, got_lse, _ = fc.run_kernel(c)
    assert fc.compare(c, got_out, got_lse, want_out, want_lse)["bit_exact"]


def special_case(causal=True, dqk=128):
    """Gaussian codes (head dims (dqk, 128)) plus: a query row of +448 codes and one of subnormal codes, a key of
    -448 codes, subnormal V codes in one dim, a NaN query code (that row NaN), a NaN V code at key 70 (rows that
    see key 70 get NaN in dim 9, the others not), NaN K and V codes at keys every row of a tile has masked (never
    read), V at 448."""
    rng = np.random.default_rng(7)
    c = fc.random_case("special_codes", rng, 1, 96, 100, 1, 1, causal, dqk=dqk)
    q, k, v = c.q, c.k, c.v
    q[0, 5, 0, :] = 0x7E
    q[0, 6, 0, :] = rng.integers(1, 8, dqk)
    k[0, 3, 0, :] = 0xFE
    v[0, :, 0, 17] = rng.integers(1, 8, 100)
    v[0, 11, 0, :] = 0x7E
    q[0, 40, 0, 3] = 0x7F
    v[0, 70, 0, 9] = 0xFF
    k[0, 99, 0, 4] = 0x7F   # key 99 is masked for every row but the last one (causal offset 4)
    v[0, 98, 0, :] = 0x7F   # key 98: visible to the last two rows only
    return c


@pytest.mark.parametrize("dqk", [128, 192])
def test_special_codes_nan_and_poison_at_masked_keys(dqk):
    c = special_case(dqk=dqk)
    want_out, want_lse = fc.run_spec(c)
    assert np.isnan(want_out[0, 40]).all() and np.isnan(want_lse[0, 0, 40])
    rows_nan9 = np.isnan(want_out[0, :, 0, 9])
    assert rows_nan9[66:].all() and not rows_nan9[:40].any() and not rows_nan9[41:66].any()
    assert np.isnan(want_out[0, 94:, 0, :]).all() and not np.isnan(want_out[0, 41:94, 0, 10]).any()
    got_out, got_lse, _ = fc.run_kernel(c)
    st = fc.compare(c, got_out, got_lse, want_out, want_lse)
    assert st["bit_exact"] and st["nan"] > 0


def test_no_lse_pointer():
    c = fc.random_case("no_lse", np.random.default_rng(3), 1, 50, 70, 1, 1, True)
    want_out, want_lse = fc.run_spec(c)
    got_out, got_lse, _ = fc.run_kernel(c, lse=False)
    assert got_lse is None
    assert fc.compare(c, got_out, None, want_out, want_lse)["bit_exact"]


@pytest.mark.parametrize("order", ["fp64", "fp32_block"])
@pytest.mark.parametrize("dqk", [128, 192])
def test_other_mfma_orders_within_the_bound(order, dqk):
    c = fc.random_case(f"order_{order}", np.random.default_rng(5), 1, 70, 150, 2, 1, True, dqk=dqk)
    st = fc.check(c, order=order)
    assert st["max_rel_row_err"] <= fc.OTHER_ORDER_TOL


def test_long_keys_v_one_gives_exactly_one():
    """V == 1 (code 0x38), v_descale 1: acc and l are the same sums (the P.V MFMA sums the same exact
    multiples of 2^-9 as the row sum), so every output is exactly 1.0 over 4,096 keys in 64 blocks (the full
    script runs 32,768)."""
    rng = np.random.default_rng(9)
    c = fc.random_case("v_one_4096", rng, 1, 32, 4096, 1, 1, False, q_gain=3.0)
    c.v[:] = 0x38
    c.vd = 1.0
    got_out, got_lse, _ = fc.run_kernel(c)
    assert (got_out == 0x3F80).all()
    want_out, want_lse = fc.run_spec(c)
    assert fc.compare(c, got_out, got_lse, want_out, want_lse)["bit_exact"]


def test_mla_long_keys_v_one_gives_exactly_one():
    """The same V == 1 property for MLA over 2,048 keys (32 blocks)."""
    rng = np.random.default_rng(12)
    c = fc.random_case("mla_v_one_2048", rng, 1, 32, 2048, 1, 1, False, q_gain=3.0, dqk=192)
    c.v[:] = 0x38
    c.vd = 1.0
    got_out, got_lse, _ = fc.run_kernel(c)
    assert (got_out == 0x3F80).all()
    want_out, want_lse = fc.run_spec(c)
    assert fc.compare(c, got_out, got_lse, want_out, want_lse)["bit_exact"]


@pytest.mark.parametrize("dqk", [128, 192])
def test_full_blocks_nan_logits_and_far_below_block_max(dqk):
    """Full blocks (non-causal) that take the rare paths of the full-block loop: a NaN q code (that row's y are
    NaN: the per-element code path, codes 0x7F), a NaN k code at key 70 (every row: NaN y in block 1), and a
    block whose logits lie far below the running max (kb > 123: the unit P scale and s_blk by v_mul)."""
    rng = np.random.default_rng(21)
    c = fc.random_case("full_rare_paths", rng, 1, 64, 128, 2, 1, False, dqk=dqk)
    c.q[0, :, 0, :] = 0x38          # head 0: q = 1.0, k = +1 in block 0, -1 in block 1 (t differs by 2 d c)
    c.k[0, 0:64, 0, :] = 0x38
    c.k[0, 64:128, 0, :] = 0xB8
    c.qd = c.kd = 1.0
    c.scale = 0.4 * 128 / dqk  # t = +-0.4 log2(e) 128 = +-73.9: kb = 147 in block 1, its max code 115 (not 0)
    c.q[0, 5, 1, 7] = 0x7F          # head 1: a NaN q code in row 5
    want_out, want_lse = fc.run_spec(c)
    assert np.isnan(want_out[0, 5, 1]).all() and not np.isnan(want_out[0, 6, 1]).any()
    got_out, got_lse, _ = fc.run_kernel(c)
    assert fc.compare(c, got_out, got_lse, want_out, want_lse)["bit_exact"]
    c2 = fc.random_case("full_nan_key", np.random.default_rng(22), 1, 40, 200, 1, 1, False, dqk=dqk)
    c2.k[0, 70, 0, 3] = 0xFF
    want_out, want_lse = fc.run_spec(c2)
    assert np.isnan(want_out).all()
    got_out, got_lse, _ = fc.run_kernel(c2)
    assert fc.compare(c2, got_out, got_lse, want_out, want_lse)["bit_exact"]


def test_overflowing_logits():
    """A softmax scale so large that t = S c overflows to +-inf in full and masked blocks (y = inf - inf is NaN:
    code 0x7F, as in the specification)."""
    c = fc.random_case("overflow", np.random.default_rng(23), 1, 40, 150, 1, 1, True)
    c.qd = c.kd = 1.0
    c.scale = 2e38  # c = scale log2(e) is still finite; |S| > 1.2 overflows t
    want_out, want_lse = fc.run_spec(c)
    assert np.isnan(want_out).all() and np.isnan(want_lse).all()
    got_out, got_lse, _ = fc.run_kernel(c)
    assert fc.compare(c, got_out, got_lse, want_out, want_lse)["bit_exact"]


@pytest.mark.parametrize("dqk", [128, 192])
def test_wide_logits_clamp_codes_to_zero(dqk):
    """softmax_scale 1 instead of 1/sqrt(d): logits spread over tens of binades, so many y fall below 0 and the
    clamp (full blocks: v_med3_f32 before the MAGIC_ROUND rounding) decides their code."""
    c = fc.random_case("wide_logits", np.random.default_rng(24), 1, 100, 300, 2, 1, True, dqk=dqk)
    c.scale = 1.0
    want_out, want_lse = fc.run_spec(c)
    got_out, got_lse, _ = fc.run_kernel(c)
    assert fc.compare(c, got_out, got_lse, want_out, want_lse)["bit_exact"]


#: element strides (batch, row, head) whose (batch, head, row) byte offsets pass 2^32 (each stride < 2^32)
FAR_STRIDES = {"q": (0xFFFFF800, 2048, 0x40000000), "k": (0xFFFFFF00, 1024, 0x20000000),
               "v": (0xFFFFFFFC, 512, 0x10000000), "out": (0xFFFFFF00, 4096, 0x08000000)}


@pytest.mark.parametrize("dqk", [128, 192])
def test_offsets_beyond_32_bits(dqk):
    """Batch 2, query head 5 of 6 (K/V head 1, group 3), rows 2^21.. (one workgroup) of 2^26: every base offset of q, k, v,
    out and lse passes 2^32 bytes (q row offset 2^21 x 2048 = 2^32 bytes exactly). Only the touched rows are
    allocated (pointer arguments moved back by the offsets, fc.run_kernel_far); the result must be the
    specification's for those rows, bit for bit."""
    rng = np.random.default_rng(2026 + dqk)
    c = fc.random_case(f"far_offsets_{dqk}", rng, 1, fc.TILE_ROWS, 100, 1, 1, False, dqk=dqk)
    row0 = 1 << 21
    seqlen_q = 1 << 26  # rows beyond the launched tiles are not run (non-causal rows are independent)
    for t, (bs, rs, hs) in FAR_STRIDES.items():
        elem = 2 if t == "out" else 1
        hidx = 5 if t in ("q", "out") else 1
        assert (2 * bs + hidx * hs) * elem >= 1 << 32
    assert row0 * FAR_STRIDES["q"][1] >= 1 << 32 and ((2 * 6 + 5) * seqlen_q + row0) * 4 >= 1 << 32
    want_out, want_lse = fc.run_spec(c)
    got_out, got_lse, _ = fc.run_kernel_far(c, batch_idx=2, head_idx=5, tile0=row0 // fc.TILE_ROWS,
                                            seqlen_q=seqlen_q, num_heads=6, strides=FAR_STRIDES, group=3)
    assert fc.compare(c, got_out, got_lse, want_out, want_lse)["bit_exact"]


@pytest.mark.parametrize("dqk", [128, 192])
def test_fused_lean_p_form_near_code_boundaries(dqk):
    """Logits near 2^15 (every row of the fused form) and keys chosen so that y lies near a .5 in one of Lean P's
    forms and not in the other: the specification's fused form y = fma(S, 8c, b) and the two-step form
    (t - m_new) 8 + 8 kb + 121 give other codes for over a thousand keys, so a kernel of the two-step form fails
    (checked: thousands of outputs differ). Causal, seqlen_k 192: two full blocks and a masked one per wave."""
    c = fc.form_boundary_case(f"form_boundaries_{dqk}", np.random.default_rng(31 + dqk), 64, 192, True, dqk=dqk)
    forms = fc.lean_p_form_codes(c)
    assert forms["fused_row"].all()
    assert (forms["spec"] != forms["two_step"]).sum() >= 1000
    assert fc.check(c)["bit_exact"]


@pytest.mark.parametrize("dqk", [128, 192])
def test_rows_beyond_2_16_take_the_two_step_form_beside_fused_rows(dqk):
    """As above with a_i up to 3.5: rows whose running max reaches 2^16 (log2 units) take the two-step form, the
    others the fused one, within each wave (the kernel's per-element path selects the form per lane, in full and
    masked blocks). The fused form in every row gives other codes in the two-step rows; the two-step form in every
    row, in the fused rows: a kernel of either fails."""
    c = fc.form_boundary_case(f"form_mixed_{dqk}", np.random.default_rng(31 + dqk), 64, 192, True, dqk=dqk,
                              a_max=3.5)
    forms = fc.lean_p_form_codes(c, forms=("spec", "two_step", "fused"))
    fused = forms["fused_row"][0, 0]
    for w in range(2):  # both kinds of rows in each wave of 32
        assert 0 < fused[32 * w:32 * w + 32].sum() < 32
    assert (forms["spec"] != forms["two_step"]).sum() >= 500 and (forms["spec"] != forms["fused"]).sum() >= 50
    assert fc.check(c)["bit_exact"]
