"""bench/sass_control.py on a synthetic `cuobjdump -sass` listing: it decodes each instruction's control bits (stall,
yield, dependency barriers), picks the smallest loop that holds a wgmma and an exponential, and sums the stalls."""
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("sass_control", ROOT / "bench" / "sass_control.py")
sass_control = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sass_control)


def high(stall, yld=1, set_bar=7, release=7, wait=0):
    """The high 64 bits of an instruction with these control fields (bits 105-121 of the 128)."""
    return (stall << 41) | (yld << 45) | (set_bar << 46) | (release << 49) | (wait << 52)


def listing(path, instrs):
    """instrs: (text, stall, set_bar, wait) at addresses 0x0, 0x10, ...; written as cuobjdump prints them."""
    lines = ["\tFunction : k"]
    for i, (text, stall, set_bar, wait) in enumerate(instrs):
        lines.append(f"        /*{16 * i:04x}*/                   {text} ;   /* 0x{0x1234:016x} */")
        lines.append(f"                                          /* 0x{high(stall, 1, set_bar, 7, wait):016x} */")
    path.write_text("\n".join(lines) + "\n")


def test_control_fields_and_key_loop(tmp_path):
    f = tmp_path / "k.sass"
    listing(f, [("MOV R1, R2", 1, 7, 0),                       # 0x00: outer loop head
                ("BAR.SYNC.DEFER_BLOCKING R2, 0x100", 2, 7, 0),  # 0x10: key loop head
                ("HGMMA.64x128x16.F32.BF16 R24, gdesc[UR20], RZ, !UPT", 5, 7, 0),
                ("MUFU.EX2 R24, R24", 1, 3, 0),
                ("FADD R4, R4, R24", 7, 7, 0x08),                # waits for barrier 3, the exponential's
                ("@!P2 BRA 0x10", 6, 7, 0),                      # key loop back edge
                ("MUFU.EX2 R5, R5", 1, 7, 0),
                ("@P1 BRA 0x0", 3, 7, 0)])                       # outer back edge: a larger loop
    ins = sass_control.parse(str(f))
    assert len(ins) == 8
    assert ins[3][2] == {"stall": 1, "yield": 1, "set": 3, "release": 7, "wait": 0}
    assert ins[4][2]["wait"] == 0x08 and ins[4][2]["stall"] == 7
    body = sass_control.key_loop(ins)
    assert [a for a, _, _ in body] == [0x10, 0x20, 0x30, 0x40, 0x50]
    total, ops, marks, cycles = sass_control.summarize(body)
    assert total == 2 + 5 + 1 + 7 + 6
    assert ops["FADD"] == 7 and ops["BRA"] == 6  # the predicate does not make its own opcode
    assert marks["MUFU.EX2"] == [7] and marks["HGMMA"] == [2] and cycles == [0, 2, 7, 8, 15]


def test_no_key_loop(tmp_path):
    f = tmp_path / "k.sass"
    listing(f, [("HGMMA.64x128x16.F32.BF16 R24, gdesc[UR20], RZ, !UPT", 1, 7, 0), ("@P0 BRA 0x0", 1, 7, 0)])
    assert sass_control.key_loop(sass_control.parse(str(f))) is None
