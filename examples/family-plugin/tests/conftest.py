"""Run the example's tests against the installed package where there is one, else
against the package folder beside this one (a checkout without an install)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if importlib.util.find_spec("bias_monitor_statements") is None:
    sys.path.insert(0, str(ROOT))
