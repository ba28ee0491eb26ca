"""Entry point: ``PYTHONPATH=tools python3 -m activations capture ...`` (see capture.py)."""
import sys

from .capture import main

sys.exit(main())
