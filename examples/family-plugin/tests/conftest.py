"""Run the example's tests from a checkout as from an installed copy: the package folder
beside this one is importable either way."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
