"""Memory instructions of the gfx950 emulator: global/flat, raw buffers (range checking and the Semantics
switch for the unverified straddling rule), scalar loads, LDS (ds_*), cross-lane LDS ops, and s_waitcnt
checking."""
import numpy as np
import pytest

from gfx950emu import EmuError, Machine, Semantics
from gfx950emu.snippet import assemble_check, run_wave, snippet_program

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
RNG = np.random.default_rng(5)
L = np.arange(64)


def mrun(body, setup, semantics=None, exec_mask=None, lds=None):
    assemble_check(body)
    m = Machine(snippet_program(body, semantics))
    sg, vg = setup(m)
    return run_wave(m, sgprs=sg, vgprs=vg, exec_mask=exec_mask, lds=lds), m


def split(addr):
    return addr & 0xFFFFFFFF, addr >> 32


def test_global_load_store_saddr_and_vaddr64():
    data = RNG.integers(0, 2 ** 32, 256, dtype=np.uint64).astype(np.uint32)
    st = {}

    def setup(m):
        st["src"] = m.upload(data)
        st["dst"] = m.alloc(64 * 16)
        s_lo, s_hi = split(st["src"])
        d = st["dst"] + 16 * L
        return ({4: s_lo, 5: s_hi}, {1: (4 * L).astype(np.uint32), 2: (d & 0xFFFFFFFF).astype(np.uint32),
                                      3: (d >> 32).astype(np.uint32)})
    body = """global_load_dword v10, v1, s[4:5] offset:16
global_load_dwordx4 v[12:15], v1, s[4:5]
global_load_ubyte v16, v1, s[4:5] offset:3
global_load_sbyte v17, v1, s[4:5] offset:3
global_load_ushort v18, v1, s[4:5] offset:2
global_load_sshort v19, v1, s[4:5] offset:2
v_mov_b32_e32 v20, 0x12345678
global_load_short_d16_hi v20, v1, s[4:5]
s_waitcnt vmcnt(0)
global_store_dwordx4 v[2:3], v[12:15], off
global_store_short v[2:3], v10, off offset:2"""
    w, m = mrun(body, setup)
    b = data.view(np.uint8)
    np.testing.assert_array_equal(w.v[10], data[L + 4])
    for j in range(4):
        np.testing.assert_array_equal(w.v[12 + j], data[L + j])  # 4*l bytes = word l, then l+1..l+3
    np.testing.assert_array_equal(w.v[16], b[4 * L + 3])
    np.testing.assert_array_equal(w.v[17].view(np.int32), b[4 * L + 3].view(np.int8))
    u16 = b[4 * L + 2].astype(np.uint32) | (b[4 * L + 3].astype(np.uint32) << 8)
    np.testing.assert_array_equal(w.v[18], u16)
    np.testing.assert_array_equal(w.v[19].view(np.int32), u16.astype(np.uint16).view(np.int16))
    lo16 = data[L] & 0xFFFF
    np.testing.assert_array_equal(w.v[20], (lo16 << 16) | 0x5678)
    out = m.download(st["dst"], np.uint32, (64, 4))
    np.testing.assert_array_equal(out[:, 1:], np.stack([data[L + j] for j in range(1, 4)], axis=1))
    np.testing.assert_array_equal(out[:, 0], (data[L] & 0xFFFF) | ((data[L + 4] & 0xFFFF) << 16))


def test_global_access_outside_allocations_is_an_error():
    def setup(m):
        a = m.upload(np.zeros(16, np.uint32))
        lo, hi = split(a)
        return {4: lo, 5: hi}, {1: (4 * L).astype(np.uint32)}
    with pytest.raises(EmuError, match="outside every allocation"):
        mrun("global_load_dword v2, v1, s[4:5] offset:4000\ns_waitcnt vmcnt(0)", setup)


def _bufdesc(addr, nrec):
    lo, hi = split(addr)
    return {8: lo, 9: hi & 0xFFFF, 10: nrec, 11: 0x00020000}


@pytest.mark.parametrize("mode,nrec,expect_lanes", [
    ("dword", 100, 25), ("dword", 102, 25), ("start", 102, 26), ("whole", 102, 25),
])
def test_buffer_load_dword_range(mode, nrec, expect_lanes):
    data = (L + 1000).astype(np.uint32)

    def setup(m):
        a = m.upload(np.concatenate([data, data]))
        return _bufdesc(a, nrec), {1: (4 * L).astype(np.uint32), 2: 0xDEADBEEF}
    w, _ = mrun("buffer_load_dword v2, v1, s[8:11], 0 offen\ns_waitcnt vmcnt(0)", setup,
                semantics=Semantics(buffer_oob=mode))
    np.testing.assert_array_equal(w.v[2], np.where(L < expect_lanes, data, 0))


@pytest.mark.parametrize("mode,nrec,full,part", [
    ("dword", 104, 6, [1, 1, 0, 0]), ("start", 100, 7, None), ("whole", 108, 6, None),
])
def test_buffer_load_dwordx4_straddling(mode, nrec, full, part):
    data = np.arange(1, 257, dtype=np.uint32)

    def setup(m):
        a = m.upload(data)
        return _bufdesc(a, nrec), {1: (16 * L).astype(np.uint32)}
    w, _ = mrun("buffer_load_dwordx4 v[4:7], v1, s[8:11], 0 offen\ns_waitcnt vmcnt(0)", setup,
                semantics=Semantics(buffer_oob=mode))
    got = np.stack([w.v[4 + j] for j in range(4)], axis=1)
    want = np.where(L[:, None] < full, data[4 * L[:, None] + np.arange(4)], 0)
    if part is not None:
        want[full] = np.where(np.array(part, bool), data[4 * full + np.arange(4)], 0)
    np.testing.assert_array_equal(got, want)


def test_buffer_soffset_and_imm_offset_and_store_drop():
    data = (L + 7).astype(np.uint32)
    st = {}

    def setup(m):
        st["a"] = m.upload(np.concatenate([data, np.zeros(64, np.uint32)]))
        sg = _bufdesc(st["a"], 100)
        sg[12] = 8
        return sg, {1: (4 * L).astype(np.uint32), 3: (L + 500).astype(np.uint32)}
    body = """buffer_load_dword v2, v1, s[8:11], s12 offen
buffer_load_dword v4, v1, s[8:11], 0 offen offset:4
buffer_store_dword v3, v1, s[8:11], 0 offen offset:128
s_waitcnt vmcnt(0)"""
    w, m = mrun(body, setup)
    # soffset (8 bytes) moves the address but is not range-checked: lanes 0..24 load words l+2
    np.testing.assert_array_equal(w.v[2], np.where(L < 25, data[np.minimum(L + 2, 63)], 0))
    np.testing.assert_array_equal(w.v[4], np.where(L < 24, data[np.minimum(L + 1, 63)], 0))
    out = m.download(st["a"], np.uint32, (128,))
    # stores at 128 + 4l: in range (< 100)? none -> all dropped
    np.testing.assert_array_equal(out[32:], np.concatenate([data[32:], np.zeros(64, np.uint32)]))


def test_scalar_loads():
    data = np.arange(100, 132, dtype=np.uint32)

    def setup(m):
        a = m.upload(data)
        lo, hi = split(a)
        sg = {4: lo, 5: hi, 6: 8}
        sg.update({32 + k: v for k, v in _bufdesc(a, 40).items()})
        return sg, {}
    body = """s_load_dwordx4 s[8:11], s[4:5], 0x10
s_load_dword s12, s[4:5], s6
s_load_dwordx8 s[16:23], s[4:5], 0x0
s_buffer_load_dwordx4 s[24:27], s[28:31], 0x20
s_waitcnt lgkmcnt(0)"""
    body = body.replace("s[28:31]", "s[40:43]")
    w, _ = mrun(body, setup)
    assert w.s[8:12] == list(data[4:8])
    assert w.s[12] == data[2]
    assert w.s[24:28] == [data[8], data[9], 0, 0]  # num_records 40 bytes: dwords 10, 11 out of range


def test_lds_read_write_variants():
    x = RNG.integers(0, 2 ** 32, 64, dtype=np.uint64).astype(np.uint32)
    y = RNG.integers(0, 2 ** 32, 64, dtype=np.uint64).astype(np.uint32)
    body = """v_lshlrev_b32_e32 v1, 3, v0
ds_write_b64 v1, v[2:3]
ds_write2_b32 v1, v3, v2 offset0:128 offset1:129
ds_write2st64_b32 v1, v2, v3 offset0:4 offset1:6
ds_write_b16 v1, v2 offset:3000
s_waitcnt lgkmcnt(0)
ds_read_b64 v[4:5], v1
ds_read2_b32 v[6:7], v1 offset0:128 offset1:129
ds_read2st64_b32 v[8:9], v1 offset0:4 offset1:6
ds_read_u16 v10, v1 offset:3000
ds_read_b128 v[12:15], v1 offset:512
ds_read_u8 v16, v1 offset:1
s_waitcnt lgkmcnt(0)"""
    w, _ = mrun(body, lambda m: ({}, {0: L.astype(np.uint32), 2: x, 3: y}))
    np.testing.assert_array_equal(w.v[4], x)
    np.testing.assert_array_equal(w.v[5], y)
    np.testing.assert_array_equal(w.v[6], y)
    np.testing.assert_array_equal(w.v[7], x)
    np.testing.assert_array_equal(w.v[8], x)
    np.testing.assert_array_equal(w.v[9], y)
    np.testing.assert_array_equal(w.v[10], x & 0xFFFF)
    np.testing.assert_array_equal(w.v[16], (x >> 8) & 0xFF)
    lds = w.lds.buf[: 2048].view(np.uint32)
    np.testing.assert_array_equal(w.v[12], lds[2 * L + 128])


def test_lds_outside_allocation_is_an_error():
    with pytest.raises(EmuError, match="outside the workgroup's 65536-byte LDS"):
        mrun("ds_write_b32 v1, v2 offset:65532\ns_waitcnt lgkmcnt(0)", lambda m: ({}, {1: 4 * L, 2: 1}))


def test_bpermute_permute_swizzle():
    x = (L * 10 + 3).astype(np.uint32)
    src = RNG.integers(0, 64, 64)
    body = """ds_bpermute_b32 v3, v1, v2
ds_permute_b32 v4, v5, v2
ds_swizzle_b32 v6, v2 offset:swizzle(SWAP,16)
ds_swizzle_b32 v7, v2 offset:swizzle(QUAD_PERM,3,2,1,0)
ds_swizzle_b32 v8, v2 offset:swizzle(BROADCAST,8,5)
s_waitcnt lgkmcnt(0)"""
    perm = RNG.permutation(64)
    w, _ = mrun(body, lambda m: ({}, {1: (4 * src).astype(np.uint32), 2: x, 5: (4 * perm).astype(np.uint32)}))
    np.testing.assert_array_equal(w.v[3], x[src])
    inv = np.empty(64, int)
    inv[perm] = L
    np.testing.assert_array_equal(w.v[4], x[inv])
    np.testing.assert_array_equal(w.v[6], x[(L & 32) | ((L & 31) ^ 16)])
    np.testing.assert_array_equal(w.v[7], x[(L & ~3) | (3 - (L & 3))])
    np.testing.assert_array_equal(w.v[8], x[(L & ~7) | 5])


def test_waitcnt_counts_in_order():
    def setup(m):
        a = m.upload(np.arange(64, dtype=np.uint32))
        lo, hi = split(a)
        return {4: lo, 5: hi}, {1: (4 * L).astype(np.uint32)}
    ok = """global_load_dword v2, v1, s[4:5]
global_load_dword v3, v1, s[4:5]
s_waitcnt vmcnt(1)
v_mov_b32_e32 v4, v2
s_waitcnt vmcnt(0)
v_mov_b32_e32 v5, v3"""
    w, _ = mrun(ok, setup)
    np.testing.assert_array_equal(w.v[5], L)
    bad = ok.replace("v_mov_b32_e32 v4, v2", "v_mov_b32_e32 v4, v3")
    with pytest.raises(EmuError, match="uses v3 before the s_waitcnt"):
        mrun(bad, setup)
    # overwriting a pending load's destination is also a hazard
    with pytest.raises(EmuError, match="uses v2"):
        mrun("global_load_dword v2, v1, s[4:5]\nv_mov_b32_e32 v2, 0\ns_waitcnt vmcnt(0)", setup)
    # the check can be switched off
    mrun(bad, setup, semantics=Semantics(waitcnt_check=False))


def test_lgkmcnt_with_out_of_order_scalar_loads():
    """LDS ops complete in order, scalar loads in any order: lgkmcnt(N > 0) guarantees no scalar load and only
    LDS ops that are complete whatever the scalar loads did (gfx950-facts §3)."""
    def setup(m):
        a = m.upload(np.arange(16, dtype=np.uint32))
        lo, hi = split(a)
        return {8: lo, 9: hi}, {1: (4 * L).astype(np.uint32)}
    lds_in_order = "ds_read_b32 v2, v1\nds_read_b32 v3, v1 offset:256\ns_waitcnt lgkmcnt(1)\nv_mov_b32_e32 v4, v2"
    mrun(lds_in_order, setup)
    with pytest.raises(EmuError, match="uses s4"):
        mrun("s_load_dword s4, s[8:9], 0x0\nds_read_b32 v2, v1\ns_waitcnt lgkmcnt(1)\ns_mov_b32 s5, s4", setup)
    with pytest.raises(EmuError, match="uses v2"):
        mrun("ds_read_b32 v2, v1\ns_load_dword s4, s[8:9], 0x0\ns_waitcnt lgkmcnt(1)\nv_mov_b32_e32 v4, v2", setup)
    w, _ = mrun("s_load_dword s4, s[8:9], 0x4\nds_read_b32 v2, v1\ns_waitcnt lgkmcnt(0)\ns_mov_b32 s5, s4", setup)
    assert w.s[5] == 1


def test_lds_dma_global_and_buffer():
    data = np.arange(1000, 1512, dtype=np.uint32)

    def setup(m):
        a = m.upload(data)
        lo, hi = split(a)
        sg = {4: lo, 5: hi, 124: 1024}
        sg.update({k + 4: v for k, v in _bufdesc(a, 1024).items()})  # s[12:15]
        return sg, {1: (16 * L).astype(np.uint32)}
    body = """global_load_lds_dwordx4 v1, s[4:5] offset:16
buffer_load_dword v1, s[12:15], 0 offen lds
s_waitcnt vmcnt(0)"""
    w, _ = mrun(body, setup)
    lds = w.lds.buf.view(np.uint32)
    # x4: lane l's 16 bytes from global byte 16 + 16 l land at LDS 1024 + 16 + 16 l (words 260 + 4 l ...)
    np.testing.assert_array_equal(lds[320:516], data[64:260])
    # dword buffer LDS-DMA: lane l reads global 16 l, writes LDS M0 + 4 l (overwrites part of the above)
    np.testing.assert_array_equal(lds[256:256 + 64], data[4 * L])


def test_lds_dma_read_before_vmcnt_is_caught():
    data = np.arange(64, dtype=np.uint32)

    def setup(m):
        a = m.upload(data)
        sg = _bufdesc(a, 256)
        sg[124] = 0
        return sg, {1: (4 * L).astype(np.uint32)}
    ok = "buffer_load_dword v1, s[8:11], 0 offen lds\ns_waitcnt vmcnt(0)\nds_read_b32 v2, v1\ns_waitcnt lgkmcnt(0)"
    w, _ = mrun(ok, setup)
    np.testing.assert_array_equal(w.v[2], data)
    with pytest.raises(EmuError, match="LDS-DMA"):
        mrun(ok.replace("s_waitcnt vmcnt(0)\n", ""), setup)
    # vmcnt(1) retires only the older of two VMEM ops: not enough when the DMA is the newer one ...
    older = "buffer_load_dword v3, v1, s[8:11], 0 offen\n" + ok.replace("vmcnt(0)", "vmcnt(1)")
    with pytest.raises(EmuError, match="LDS-DMA"):
        mrun(older, setup)
    # ... and enough when it is the older one
    mrun(ok.replace("s_waitcnt vmcnt(0)", "buffer_load_dword v3, v1, s[8:11], 0 offen\ns_waitcnt vmcnt(1)"), setup)


LOAD_TYPES = {  # suffix -> (bytes, kind): kind u/s = zero/sign-extended, lo/hi/slo/shi = 16-bit half, raw
    "dword": (4, "raw"), "dwordx2": (8, "raw"), "dwordx3": (12, "raw"), "dwordx4": (16, "raw"),
    "ubyte": (1, "u"), "sbyte": (1, "s"), "ushort": (2, "u"), "sshort": (2, "s"),
    "short_d16": (2, "lo"), "short_d16_hi": (2, "hi"), "ubyte_d16": (1, "lo"), "ubyte_d16_hi": (1, "hi"),
    "sbyte_d16": (1, "slo"), "sbyte_d16_hi": (1, "shi"),
}
DS_LOAD = {"b32": "dword", "b64": "dwordx2", "b96": "dwordx3", "b128": "dwordx4", "u8": "ubyte", "i8": "sbyte",
           "u16": "ushort", "i16": "sshort", "u16_d16": "short_d16", "u16_d16_hi": "short_d16_hi",
           "u8_d16": "ubyte_d16", "u8_d16_hi": "ubyte_d16_hi", "i8_d16": "sbyte_d16", "i8_d16_hi": "sbyte_d16_hi"}
PRESET = 0xA5A55A5A


def _expect_load(mem: np.ndarray, offs: np.ndarray, t: str) -> np.ndarray:
    """(nregs, 64) expected registers for a load of type t at byte offsets offs of mem (uint8)."""
    size, kind = LOAD_TYPES[t]
    vals = [int.from_bytes(mem[o:o + size].tobytes(), "little") for o in offs]
    if kind == "raw":
        return np.array([[(v >> (32 * r)) & M32 for v in vals] for r in range(size // 4)], np.uint32)
    res = []
    for v in vals:
        sv = v - (1 << (8 * size)) if v >> (8 * size - 1) else v
        if kind == "u":
            res.append(v)
        elif kind == "s":
            res.append(sv & M32)
        elif kind in ("lo", "slo"):
            res.append((PRESET & 0xFFFF0000) | ((sv if kind == "slo" else v) & 0xFFFF))
        else:
            res.append((PRESET & 0xFFFF) | (((sv if kind == "shi" else v) & 0xFFFF) << 16))
    return np.array([res], np.uint32)


M32 = 0xFFFFFFFF


@pytest.mark.parametrize("seg,t", [("global", t) for t in LOAD_TYPES] + [("flat", "dwordx3"), ("flat", "sbyte")]
                         + [("buffer", t) for t in ("dwordx2", "dwordx3", "ubyte", "sshort", "short_d16_hi")])
def test_every_vector_load_type(seg, t):
    mem = RNG.integers(0, 256, 2048).astype(np.uint8)
    size = LOAD_TYPES[t][0]
    nreg = max(1, size // 4)
    offs = (16 * L + (3 if size < 4 else 0)).astype(np.int64)
    dst = "v10" if nreg == 1 else f"v[10:{9 + nreg}]"

    def setup(m):
        a = m.upload(mem)
        lo, hi = split(a)
        sg = {4: lo, 5: hi}
        sg.update(_bufdesc(a, 2048))
        vg = {1: offs.astype(np.uint32), 10: PRESET}
        full = a + offs
        vg[2], vg[3] = (full & M32).astype(np.uint32), (full >> 32).astype(np.uint32)
        return sg, vg
    body = {"global": f"global_load_{t} {dst}, v1, s[4:5]", "flat": f"flat_load_{t} {dst}, v[2:3]",
            "buffer": f"buffer_load_{t} {dst}, v1, s[8:11], 0 offen"}[seg] + "\ns_waitcnt vmcnt(0)"
    w, _ = mrun(body, setup)
    np.testing.assert_array_equal(w.v[10:10 + nreg], _expect_load(mem, offs, t))


@pytest.mark.parametrize("t", list(DS_LOAD))
def test_every_lds_load_type(t):
    mem = RNG.integers(0, 256, 4096).astype(np.uint8)
    gt = DS_LOAD[t]
    size = LOAD_TYPES[gt][0]
    nreg = max(1, size // 4)
    offs = (16 * L + (1 if size < 4 else 0)).astype(np.int64)
    dst = "v10" if nreg == 1 else f"v[10:{9 + nreg}]"
    w, _ = mrun(f"ds_read_{t} {dst}, v1 offset:8\ns_waitcnt lgkmcnt(0)",
                lambda m: ({}, {1: offs.astype(np.uint32), 10: PRESET}), lds=mem)
    np.testing.assert_array_equal(w.v[10:10 + nreg], _expect_load(mem, offs + 8, gt))


STORE_TYPES = {"dword": (4, 0), "dwordx2": (8, 0), "dwordx3": (12, 0), "dwordx4": (16, 0), "byte": (1, 0),
               "short": (2, 0), "byte_d16_hi": (1, 16), "short_d16_hi": (2, 16)}
DS_STORE = {"b32": "dword", "b64": "dwordx2", "b96": "dwordx3", "b128": "dwordx4", "b8": "byte", "b16": "short",
            "b8_d16_hi": "byte_d16_hi", "b16_d16_hi": "short_d16_hi"}


def _expect_store(before: np.ndarray, offs, regs: np.ndarray, t: str) -> np.ndarray:
    size, shift = STORE_TYPES[t]
    out = before.copy()
    for l, o in enumerate(offs):
        if size >= 4:
            b = regs[: size // 4, l].astype("<u4").tobytes()
        else:
            b = int((int(regs[0, l]) >> shift) & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
        out[o:o + size] = np.frombuffer(b, np.uint8)
    return out


@pytest.mark.parametrize("seg,t", [("global", t) for t in STORE_TYPES] + [("flat", "dwordx2"), ("buffer", "short"),
                                                                           ("buffer", "dwordx3"), ("ds", None)])
def test_every_store_type(seg, t):
    types = list(DS_STORE) if seg == "ds" else [t]
    for tt in types:
        gt = DS_STORE[tt] if seg == "ds" else tt
        size = STORE_TYPES[gt][0]
        nreg = max(1, size // 4)
        regs = RNG.integers(0, 2 ** 32, (4, 64), dtype=np.uint64).astype(np.uint32)
        offs = (32 * L + (5 if size < 4 else 4)).astype(np.int64)
        data = "v10" if nreg == 1 else f"v[10:{9 + nreg}]"
        st = {}

        def setup(m):
            st["a"] = a = m.upload(np.zeros(4096, np.uint8))
            lo, hi = split(a)
            sg = {4: lo, 5: hi}
            sg.update(_bufdesc(a, 4096))
            full = a + offs
            vg = {1: offs.astype(np.uint32), 2: (full & M32).astype(np.uint32), 3: (full >> 32).astype(np.uint32)}
            vg.update({10 + j: regs[j] for j in range(4)})
            return sg, vg
        body = {"global": f"global_store_{gt} v1, {data}, s[4:5]", "flat": f"flat_store_{gt} v[2:3], {data}",
                "buffer": f"buffer_store_{gt} {data}, v1, s[8:11], 0 offen",
                "ds": f"ds_write_{tt} v1, {data}"}[seg] + "\ns_waitcnt vmcnt(0) lgkmcnt(0)"
        w, m = mrun(body, setup)
        got = w.lds.buf[:4096] if seg == "ds" else m.download(st["a"], np.uint8, (4096,))
        np.testing.assert_array_equal(got, _expect_store(np.zeros(4096, np.uint8), offs, regs, gt), err_msg=tt)


def test_ds_read2_write2_b64_and_st64():
    x = RNG.integers(0, 2 ** 32, (4, 64), dtype=np.uint64).astype(np.uint32)
    body = """v_lshlrev_b32_e32 v1, 4, v0
ds_write2_b64 v1, v[2:3], v[4:5] offset1:128
ds_write2st64_b64 v1, v[4:5], v[2:3] offset0:4 offset1:6
s_waitcnt lgkmcnt(0)
ds_read2_b64 v[8:11], v1 offset1:128
ds_read2st64_b64 v[12:15], v1 offset0:4 offset1:6
s_waitcnt lgkmcnt(0)"""
    w, _ = mrun(body, lambda m: ({}, {0: L.astype(np.uint32), 2: x[0], 3: x[1], 4: x[2], 5: x[3]}))
    for j, r in enumerate((0, 1, 2, 3)):
        np.testing.assert_array_equal(w.v[8 + j], x[r])
    for j, r in enumerate((2, 3, 0, 1)):
        np.testing.assert_array_equal(w.v[12 + j], x[r])
    lds = w.lds.buf.view(np.uint32)
    np.testing.assert_array_equal(lds[(4 * 512 + 16 * L) // 4], x[2])  # st64 b64: offset unit 512 bytes


def test_reading_past_an_allocation_into_the_next_is_an_error():
    def setup(m):
        a = m.upload(np.arange(16, dtype=np.uint32))
        m.upload(np.arange(16, dtype=np.uint32))  # a neighbour allocated right after
        lo, hi = split(a)
        return {4: lo, 5: hi}, {1: (4 * (L % 17)).astype(np.uint32)}  # lane 16 reads word 16 = 1 past the end
    with pytest.raises(EmuError, match="outside every allocation"):
        mrun("global_load_dword v2, v1, s[4:5]\ns_waitcnt vmcnt(0)", setup)
    mrun("global_load_dword v2, v1, s[4:5]\ns_waitcnt vmcnt(0)", setup, exec_mask=(1 << 64) - 1 - (1 << 16) - (1 << 33)
         - (1 << 50))  # lanes 16, 33, 50 (word 16) disabled: fine


def test_lds_dma_m0_bits_switch():
    data = np.arange(64, dtype=np.uint32) + 7

    def setup(m):
        a = m.upload(data)
        sg = _bufdesc(a, 256)
        sg[124] = 0x10000 + 256  # M0 above 64 KiB
        return sg, {1: (4 * L).astype(np.uint32)}
    body = "buffer_load_dword v1, s[8:11], 0 offen lds\ns_waitcnt vmcnt(0)"
    assemble_check(body, 160 * 1024 - 1024)
    for bits, base in ((32, 0x10000 + 256), (16, 256)):
        m = Machine(snippet_program(body, Semantics(lds_dma_m0_bits=bits), lds_bytes=160 * 1024 - 1024))
        sg, vg = setup(m)
        w = run_wave(m, sgprs=sg, vgprs=vg)
        np.testing.assert_array_equal(w.lds.buf[base:base + 256].view(np.uint32), data)


def test_scratch_load_store_per_lane():
    from gfx950emu.snippet import run_snippet
    x = RNG.integers(0, 2 ** 32, (4, 64), dtype=np.uint64).astype(np.uint32)
    body = """scratch_store_dwordx4 off, v[4:7], off offset:16
scratch_store_dword v1, v8, off
scratch_store_short v1, v8, s2 offset:2
s_waitcnt vmcnt(0)
scratch_load_dwordx4 v[12:15], off, off offset:16
scratch_load_dword v9, v1, off
scratch_load_ushort v10, v1, s2 offset:2
scratch_load_sbyte v11, off, s3
s_waitcnt vmcnt(0)"""
    w = run_snippet(body, vgprs={1: 4 * (L % 3), 4: x[0], 5: x[1], 6: x[2], 7: x[3], 8: x[0] ^ 0x5A5A5A5A},
                    sgprs={2: 40, 3: 17}, private_bytes=64)
    for j in range(4):
        np.testing.assert_array_equal(w.v[12 + j], x[j])  # lanes do not see each other's scratch
    np.testing.assert_array_equal(w.v[9], x[0] ^ 0x5A5A5A5A)
    np.testing.assert_array_equal(w.v[10], (x[0] ^ 0x5A5A5A5A) & 0xFFFF)
    np.testing.assert_array_equal(w.v[11].view(np.int32), (x[0] >> 8).astype(np.uint8).view(np.int8))  # byte 17
    with pytest.raises(EmuError, match="outside the 64-byte private segment"):
        run_snippet("scratch_store_dword off, v1, off offset:62", private_bytes=64)
