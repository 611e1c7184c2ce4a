"""The report is written against ``readmodel.reader.RunReader``, not the store: the store's
``StoreView`` must keep matching that protocol (same methods, same parameters), or a
report would fail only when it runs. A real view over a real DuckDB file is checked too."""

from __future__ import annotations

import inspect
from pathlib import Path

from monitor.readmodel.reader import RunReader
from monitor.store.db import Store
from monitor.store.view import StoreView


def _methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(fn)
        for name, fn in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }


def test_store_view_has_every_read_the_report_makes_with_the_same_parameters():
    wanted = _methods(RunReader)
    have = _methods(StoreView)
    assert wanted, "the protocol lists no reads"
    for name, sig in wanted.items():
        assert name in have, f"StoreView lacks {name}"
        assert list(sig.parameters) == list(have[name].parameters), name
        defaults = [p.default for p in sig.parameters.values()]
        assert defaults == [p.default for p in have[name].parameters.values()], name


def test_a_real_view_is_a_run_reader(tmp_path: Path):
    store = Store.open(tmp_path / "monitor.duckdb")
    with store.read() as view:
        reader: RunReader = view
        assert reader.runs_since(None) == [] and reader.latest_validations(None) == []
