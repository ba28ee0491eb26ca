"""Command line: python3 -m gfx950hazard FILE.s [...]; exit status 1 if any hazard is found, 2 on bad input."""
import sys

from .checker import check_text
from .isa import AsmError


def main(argv) -> int:
    if not argv:
        print("usage: python3 -m gfx950hazard FILE.s [FILE.s ...]", file=sys.stderr)
        return 2
    bad = 0
    for path in argv:
        try:
            with open(path) as f:
                found = check_text(f.read())
        except (OSError, AsmError) as e:
            print(f"{path}: error: {e}", file=sys.stderr)
            return 2
        for v in found:
            print(f"{path}:{v}")
        bad += len(found)
        print(f"{path}: {len(found)} hazard(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
