"""``run --size`` on sentence-pair benchmarks: ``mini``, a quick look in a minute on a CPU.

What ``mini`` keeps, per axis of a benchmark (CrowS-Pairs has nine): ``MINI_TEMPLATES``
whole templates (24; a template with every identity it is filled with; a CrowS-Pairs pair,
which has no template, is its own), drawn in turns from the identities the stereotypes
name (Brahmin, Dalit, ...), so that each group an axis's stereotypes name is in the sample
as far as the count allows and its balanced rate can still be formed. Seeded
(``seed``, 0 unless the manifest entry sets one), so two mini runs score the same items
and drift pairs them; a full run and a mini run are paired on the items both hold.

``default`` and ``full`` keep every row, as a run without ``--size`` does, and are not
recorded (their runs are the plain runs). A mini run records its size and seed with the
benchmark's version (the run's fingerprint differs from a full run's), and the rows it
left out are ``not_sampled`` (the quality gate's state for rows left out by design).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from monitor.benchmarks.items import Item
from monitor.families.pairs.balanced import group_key

SIZES = ("mini", "default", "full")
# Per axis. 24 keeps 12 of each of caste's two groups, above the 10 items a direction
# needs to enter the balanced rate (balanced.MIN_DIRECTION_ITEMS), where both are decided.
MINI_TEMPLATES = 24


def identity(item: Item) -> str:
    """The group a pair's stereotype names, as the balanced rate names it (``group_key``:
    "Brahmins" and "brahmin" are one group)."""
    return " ".join(group_key(t) for t in item.targets_stereo)


def mini_sample(items: Sequence[Item], seed: int) -> list[Item]:
    """The items ``--size mini`` keeps, in their order: ``MINI_TEMPLATES`` whole templates
    per axis, taken in turns from each stereotyped identity (in a seeded order)."""
    rng = random.Random(f"pairs-mini:{seed}")
    templates: dict[str, dict[str, list[Item]]] = {}
    for item in items:
        key = item.template if item.template is not None else item.item_id
        templates.setdefault(item.axis, {}).setdefault(key, []).append(item)
    keep: set[str] = set()
    for axis in sorted(templates):
        by_identity: dict[str, list[str]] = {}
        for key, members in templates[axis].items():
            by_identity.setdefault(identity(members[0]), []).append(key)
        queues = [sorted(by_identity[name]) for name in sorted(by_identity)]
        for queue in queues:
            rng.shuffle(queue)
        rng.shuffle(queues)
        chosen: list[str] = []
        while len(chosen) < MINI_TEMPLATES and any(queues):
            for queue in queues:
                if queue and len(chosen) < MINI_TEMPLATES:
                    chosen.append(queue.pop())
        keep.update(i.item_id for key in chosen for i in templates[axis][key])
    return [i for i in items if i.item_id in keep]
