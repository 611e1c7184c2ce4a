"""The paired stereo / anti comparison (``monitor.drift.paired_outcomes``) gives the same
bits in every process.

SeeGULL's drift widens Newcombe's interval by the design effect of its identities, a sum
over the items both runs decided. Summed in a set's order, which follows the per-process
string hash, the interval's last digits changed from one ``drift`` to the next on the same
store (seen: ci_low 18.912246302065665, ...650, ...657, ...654 in four runs). Each seed
below runs in its own interpreter, as each ``bias-monitor drift`` does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SCRIPT = """
import random
from monitor.drift.clusters import design_effect
from monitor.drift.paired_outcomes import moves

rng = random.Random(7)
ids = [f"item-{k:03d}" for k in range(300)]
old = {i: rng.choice(["stereo", "anti", "tie"]) for i in ids}
new = {i: rng.choice(["stereo", "anti", "tie"]) for i in ids}
clusters = {i: f"identity-{rng.randrange(17)}" for i in ids}
print(repr(design_effect(moves(old, new), clusters).design_effect))
"""


def _design_effect(seed: int) -> str:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout.strip()


def test_the_design_effect_is_the_same_bits_whatever_the_string_hash() -> None:
    values = {_design_effect(seed) for seed in range(6)}
    assert len(values) == 1, values
    assert float(values.pop()) > 1  # clustered: the interval is widened
