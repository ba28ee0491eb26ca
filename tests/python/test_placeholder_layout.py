import pathlib

def test_umbrella_header_exists():
    root = pathlib.Path(__file__).resolve().parents[2]
    assert (root / "include" / "zyfa" / "zyfa.hpp").is_file()
