"""Every family's hooks resolve, and every hook name is one the generic rooms document.

A hook is a ``"module:function"`` string (``ResultFamily.hooks``), resolved only when a
room first calls it, so a typo in a reference would surface as an AttributeError in the
middle of a user's ``drift`` or ``report``. This resolves each reference up front and
checks its name against the contract in ``monitor/families/__init__.py``.
"""

from __future__ import annotations

import re

import monitor.families
from monitor.metrics.families import FAMILIES, FOLDER_FAMILIES


def documented_hooks() -> set[str]:
    doc = monitor.families.__doc__ or ""
    return set(re.findall(r"^``([a-z_]+)``", doc, flags=re.MULTILINE))


def test_every_family_is_a_folder_whose_hooks_resolve_and_are_documented():
    assert len(FOLDER_FAMILIES) == len(FAMILIES) >= 3  # pairs, association, choice-QA
    documented = documented_hooks()
    assert {"compare", "unscored", "item_scores", "cli_table", "report_block"} <= documented
    for family in FAMILIES.values():
        assert set(family.hooks) <= documented, (family.name, set(family.hooks) - documented)
        for name, ref in family.hooks.items():
            assert ref.startswith(f"monitor.families.{ref.split('.')[2]}."), ref
            assert callable(family.hook(name)), (family.name, name, ref)
        assert family.hook("no-such-hook") is None


def test_every_family_can_be_compared_by_drift():
    """Drift's session has no comparator table: a family without a ``compare`` hook
    could not be compared at all."""
    assert all(f.hook("compare") is not None for f in FAMILIES.values())
    assert FAMILIES["pair-outcome"].hook("unscored") is not None
