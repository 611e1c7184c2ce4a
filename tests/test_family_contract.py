"""The family contract holds: the core names no family, every family's functions match
the contract's Protocols, ARCHITECTURE.md lists the contract as it is, and the registry
fails in one clear line where an installed family is wrong.

Families are found through the ``bias_monitor.families`` entry points only
(``monitor.contract.registry``); outside ``monitor/families/<name>/`` no module imports a
family or names its package, its benchmark ids or its manifest formats.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import os
import re
import subprocess
import sys
import tomllib
import typing
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

from monitor.contract import capabilities, registry
from monitor.contract.capabilities import CAPABILITIES
from monitor.contract.family import Builders, Family

REPO = Path(__file__).resolve().parents[1]
MONITOR = REPO / "monitor"

# Mentions of a family outside its folder that are allowed, (file, name) -> why. None is
# left; the mechanism stays so that a temporary one is written down, with its reason, and
# the test fails on a stale entry as on a new mention.
ALLOWED_MENTIONS: dict[tuple[str, str], str] = {}
# A family's own record columns (its detail tables') are its names too. The released
# store migrations created and moved the old wide tables, which had those columns, and a
# released migration is never edited: only that module may name them.
ALLOWED_COLUMN_MODULES = {"monitor/store/schema.py"}
# Where importlib.import_module may appear: the registry, the pinned-package model
# assembler, and (until branch `terminal` turns importers into data) choice-QA's importer
# specs, which name their work as "module:function".
ALLOWED_IMPORT_MODULE = {
    "monitor/contract/registry.py",
    "monitor/snapshots/resolve.py",
}


def _family_packages() -> dict[str, str]:
    """Entry-point name -> the family's package (``monitor.families.pairs``)."""
    return {
        ep.name: ep.value.partition(":")[0].rpartition(".")[0]
        for ep in entry_points(group=registry.GROUP)
    }


def _benchmark_ids() -> set[str]:
    raw = tomllib.loads((REPO / "data" / "benchmarks.toml").read_text(encoding="utf-8"))
    ids = set(raw["benchmarks"])
    for family in registry.families():
        if family.benchmarks is not None:
            ids |= set(tomllib.loads(family.benchmarks.read_text(encoding="utf-8"))["benchmarks"])
    return ids


def _core_modules() -> list[Path]:
    """Every module of monitor/ outside a registered family's own folder."""
    folders = [MONITOR.parent / Path(*pkg.split(".")) for pkg in _family_packages().values()]
    return [
        p
        for p in sorted(MONITOR.rglob("*"))
        if p.suffix in (".py", ".j2", ".css", ".toml") and not any(f in p.parents for f in folders)
    ]


def family_columns() -> set[str]:
    """Every family's own record columns: the names of its detail tables' columns that
    are compounds (``lp_stereo``, ``text_anti``, ``raw_stereo_cell``); a plain word
    (``direction``) is English as often as it is a column, and is left out."""
    return {
        c.name
        for family in registry.families()
        for table in family.detail_tables
        for c in table.columns
        if "_" in c.name
    }


def family_mentions(paths: list[Path]) -> set[tuple[str, str]]:
    """(file, name) for every import of a family module and every mention of a family's
    package, benchmark id, manifest format or own record column in ``paths`` (a column
    only outside ``ALLOWED_COLUMN_MODULES``)."""
    packages = _family_packages().values()
    names: list[tuple[str, re.Pattern[str]]] = []
    for pkg in packages:
        short = pkg.rpartition(".")[2]
        names.append((short, re.compile(rf"\bfamilies[./]{short}\b")))
    for name in sorted(_benchmark_ids() | set(registry.formats())):
        names.append((name, re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w-])")))
    columns = [(name, re.compile(rf"\b{re.escape(name)}\b")) for name in sorted(family_columns())]
    found: set[tuple[str, str]] = set()
    for path in paths:
        rel = path.relative_to(REPO).as_posix() if REPO in path.parents else path.name
        text = path.read_text(encoding="utf-8")
        found |= {(rel, name) for name, rx in names if rx.search(text)}
        if rel not in ALLOWED_COLUMN_MODULES:
            found |= {(rel, name) for name, rx in columns if rx.search(text)}
        if path.suffix == ".py":
            for node in ast.walk(ast.parse(text)):
                modules = []
                if isinstance(node, ast.Import):
                    modules = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
                for m in modules:
                    for pkg in packages:
                        if m == pkg or m.startswith(pkg + "."):
                            found.add((rel, pkg.rpartition(".")[2]))
    return found


def test_no_core_module_imports_or_names_a_family():
    assert len(_family_packages()) >= 3  # pairs, association, choice-QA (entry points)
    found = family_mentions(_core_modules())
    new = sorted(found - set(ALLOWED_MENTIONS))
    stale = sorted(set(ALLOWED_MENTIONS) - found)
    assert not new, f"the core names a family here (use the registry): {new}"
    assert not stale, f"gone from the code: delete from ALLOWED_MENTIONS: {stale}"


def test_a_new_mention_of_a_family_is_caught(tmp_path):
    """The walk catches an import of a family module and a benchmark id or format in a
    core module (a file written where the core would hold it)."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        'from monitor.families.pairs import compare\nFORMAT = "bbq-jsonl"\nID = "bhed-caste"\n',
        encoding="utf-8",
    )
    found = family_mentions([probe])
    assert found == {("probe.py", "pairs"), ("probe.py", "bbq-jsonl"), ("probe.py", "bhed-caste")}


def test_a_family_column_named_in_the_core_is_caught(tmp_path):
    """The pairs' own columns count as the pairs' names: a core module that selects one
    is caught, and so is one in the store's other modules; only the released migrations
    may name them."""
    assert {"text_stereo", "lp_stereo", "prob_anti", "n_tokens_stereo", "raw_stereo_cell"} <= (
        family_columns()
    )
    probe = tmp_path / "probe.py"
    probe.write_text('SQL = "SELECT s.lp_stereo, i.text_anti FROM scores s"\n', encoding="utf-8")
    assert family_mentions([probe]) == {("probe.py", "lp_stereo"), ("probe.py", "text_anti")}
    assert family_mentions([MONITOR / "store" / "schema.py"]) == set()


def test_import_module_appears_only_in_the_registry_and_the_model_assembler():
    users = {
        p.relative_to(REPO).as_posix()
        for p in MONITOR.rglob("*.py")
        if "import_module" in p.read_text(encoding="utf-8")
    }
    assert users == ALLOWED_IMPORT_MODULE


def test_family_builds_each_capability_once_whoever_declared_it():
    # The families write plain builder methods (no functools.cache of their own): the
    # contract keeps what each returned, so a room calling one again reimports and
    # rebuilds nothing; what a family does not write is the empty capability (drift: None).
    built: list[str] = []

    class Probe(Builders):
        def items(self) -> capabilities.Items:
            built.append("items")
            return capabilities.Items(load=lambda *a, **k: [], quality=lambda *a, **k: None)

        def metrics(self) -> capabilities.Metrics:
            return capabilities.Metrics(specs=lambda family: [])

    family = Family(
        name="probe",
        summary="",
        item_kinds=("probe",),
        measure_kinds=("rate",),
        headline="rate",
        outcomes=True,
        formats=(),
        capabilities=Probe(),
    )
    assert family.items() is family.items()
    assert built == ["items"]
    assert family.drift is None
    assert family.scoring() == capabilities.Scoring()
    with pytest.raises(TypeError):  # items and metrics are every family's to write
        type("NoItems", (Builders,), {})()
    for f in registry.families():
        for name in CAPABILITIES:
            build = getattr(f, name)
            if build is not None:
                assert build() is build(), (f.name, name)


def _architecture_capabilities() -> dict[str, list[str]]:
    text = (REPO / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## One way in for each kind of result", 1)[1].split("\n## ", 1)[0]
    listed = {}
    for m in re.finditer(r"^- \*\*`(\w+)`\*\*: ([^\n]*)", section, flags=re.MULTILINE):
        listed[m.group(1)] = re.findall(r"`(\w+)`", m.group(2).split(" — ")[0])
    return listed


def test_architecture_lists_the_contract_as_it_is():
    expected = {
        name: [f.name for f in dataclasses.fields(cls)] for name, cls in CAPABILITIES.items()
    }
    assert _architecture_capabilities() == expected
    family_fields = {f.name for f in dataclasses.fields(Family)}
    assert set(CAPABILITIES) <= family_fields


# ------------------------------------------------------------------ signatures


def _type_checking_namespace(module: Any) -> dict[str, Any]:
    """``module``'s globals plus what it imports under ``if TYPE_CHECKING:`` (evaluated
    now, as a type checker would), so its string annotations resolve."""
    ns = dict(vars(module))
    source = inspect.getsource(module)
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            exec(compile(ast.Module(body=node.body, type_ignores=[]), "<tc>", "exec"), ns)
    return ns


def _hints(func: Callable[..., Any]) -> dict[str, Any]:
    module = sys.modules[func.__module__]
    return typing.get_type_hints(func, globalns=_type_checking_namespace(module))


OPAQUE = {object, Any}


def _accepts(wide: Any, narrow: Any) -> bool:
    """Whether a parameter annotated ``wide`` (the function's) takes what ``narrow``
    (the Protocol's) promises. Comparisons and backends are passed opaquely by the core
    (a family only ever gets its own), so a family may name its own type for them."""
    if wide in OPAQUE or wide == narrow or narrow in OPAQUE:
        return True
    if narrow is capabilities_comparison():
        return True
    if narrow is _run_options_model() and isinstance(wide, type):
        # A family's ``Run`` hooks are handed its own option model only.
        return issubclass(wide, narrow)
    n_origin, w_origin = typing.get_origin(narrow), typing.get_origin(wide)
    if n_origin in (typing.Union, __import__("types").UnionType):
        return all(_accepts(wide, a) for a in typing.get_args(narrow))
    if w_origin in (typing.Union, __import__("types").UnionType):
        return any(_accepts(a, narrow) for a in typing.get_args(wide))
    if n_origin is not None and w_origin is not None:
        n_args, w_args = typing.get_args(narrow), typing.get_args(wide)
        return (
            isinstance(n_origin, type)
            and isinstance(w_origin, type)
            and issubclass(n_origin, w_origin)
            and (not w_args or len(n_args) == len(w_args))
            and all(_accepts(w, n) for w, n in zip(w_args, n_args, strict=False))
        )
    if isinstance(narrow, type) and getattr(wide, "_is_protocol", False):
        # A structural type (drift's FamilyResult, a backend protocol): what it names
        # must be there.
        names = [n for n in vars(wide) if not n.startswith("_")]
        names += list(getattr(wide, "__annotations__", {}))
        declared = {a for c in narrow.__mro__ for a in getattr(c, "__annotations__", {})}
        return all(hasattr(narrow, n) or n in declared for n in names)  # inherited fields too
    if isinstance(narrow, type) and isinstance(wide, type):
        return issubclass(narrow, wide)
    return False


def capabilities_comparison() -> Any:
    return _type_checking_namespace(capabilities)["Comparison"]


def _run_options_model() -> Any:
    return _type_checking_namespace(capabilities)["BaseModel"]


def signature_problems(func: Callable[..., Any], protocol: type) -> list[str]:
    """What ``func`` does differently from ``protocol.__call__``: a parameter missing or
    of another kind, a default the Protocol has and the function lacks, an extra
    parameter without a default, an annotation that does not take the Protocol's."""
    want = inspect.signature(protocol.__call__)
    have = inspect.signature(func)
    want_params = [p for p in want.parameters.values() if p.name != "self"]
    have_params = dict(have.parameters)
    var_kw = any(p.kind is p.VAR_KEYWORD for p in have_params.values())
    want_hints = typing.get_type_hints(
        protocol.__call__, globalns=_type_checking_namespace(capabilities)
    )
    have_hints = _hints(func)
    problems = []
    positional = [p.name for p in have_params.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
    for k, p in enumerate(want_params):
        got = have_params.get(p.name)
        if got is None:
            if not (var_kw and p.kind is p.KEYWORD_ONLY):
                problems.append(f"no parameter {p.name!r}")
            continue
        if p.kind is p.POSITIONAL_OR_KEYWORD and positional[k : k + 1] != [p.name]:
            problems.append(f"{p.name!r} is not positional parameter {k}")
        if p.kind is p.KEYWORD_ONLY and got.kind not in (
            got.KEYWORD_ONLY,
            got.POSITIONAL_OR_KEYWORD,
        ):
            problems.append(f"{p.name!r} cannot be passed by keyword")
        if p.default is not p.empty and got.default is got.empty:
            problems.append(f"{p.name!r} has no default")
        both = p.name in want_hints and p.name in have_hints
        if both and not _accepts(have_hints[p.name], want_hints[p.name]):
            problems.append(f"{p.name!r}: {have_hints[p.name]} does not take {want_hints[p.name]}")
    names = {p.name for p in want_params}
    for p in have_params.values():
        extra = p.name not in names and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        if extra and p.default is p.empty:
            problems.append(f"extra parameter {p.name!r} without a default")
    ret_want, ret_have = want_hints.get("return"), have_hints.get("return")
    if ret_want is not None and ret_have is not None and not _accepts(ret_want, ret_have):
        problems.append(f"returns {ret_have}, not {ret_want}")
    return problems


def _protocol_of(cls: type, field: str) -> type | None:
    hint = typing.get_type_hints(cls, globalns=_type_checking_namespace(capabilities))[field]
    for t in (hint, *typing.get_args(hint)):
        if isinstance(t, type) and issubclass(t, typing.Protocol) and "__call__" in vars(t):
            return t
    return None


def _capability_functions() -> list[tuple[str, str, Callable[..., Any], type]]:
    out = []
    for family in registry.families():
        for name in CAPABILITIES:
            factory = getattr(family, name)
            if factory is None:
                continue
            cap = factory()
            assert isinstance(cap, CAPABILITIES[name]), (family.name, name, cap)
            for field in dataclasses.fields(cap):
                value = getattr(cap, field.name)
                protocol = _protocol_of(type(cap), field.name)
                if protocol is not None and value is not None:
                    out.append((family.name, f"{name}.{field.name}", value, protocol))
    return out


def test_every_family_function_matches_its_protocol():
    checked = _capability_functions()
    assert len(checked) >= 40  # the three families' hooks, each compared
    problems = {
        (family, where): signature_problems(func, protocol)
        for family, where, func, protocol in checked
    }
    assert {k: v for k, v in problems.items() if v} == {}


def test_a_function_that_strays_from_its_protocol_is_caught():
    def compare(view: str, new_run_id: str, *, alpha: float) -> list[str]:
        return []

    problems = signature_problems(compare, capabilities.Compare)
    assert "no parameter 'request'" in problems  # the hook takes one CompareRequest
    assert any("'view'" in p for p in problems)  # the long signature it replaced is refused

    def mistyped(request: str) -> list[str]:
        return []

    # a str does not take a CompareRequest
    assert any("'request'" in p for p in signature_problems(mistyped, capabilities.Compare))


# ------------------------------------------------------------------ the registry


def _fake_distribution(site: Path, name: str, entries: dict[str, str]) -> None:
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entries.items())
    (info / "entry_points.txt").write_text(f"[{registry.GROUP}]\n{lines}")


def _cli(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_plug_in_that_fails_to_import_is_named_in_one_line(tmp_path, monitor_env):
    _fake_distribution(tmp_path, "broken-family", {"broken": "no_such_family_module:FAMILY"})
    help_ = _cli(tmp_path, "--help")
    assert help_.returncode == 0, help_.stderr  # the CLI still starts
    proc = _cli(tmp_path, "data", "list")
    assert proc.returncode != 0
    assert "family plug-in 'broken' (no_such_family_module:FAMILY) failed to import" in (
        proc.stderr
    )
    assert "ModuleNotFoundError" in proc.stderr and "Traceback" not in proc.stderr


def test_two_families_of_one_name_are_refused(tmp_path, monitor_env):
    _fake_distribution(tmp_path, "copied-family", {"copy": "monitor.families.pairs.family:FAMILY"})
    proc = _cli(tmp_path, "data", "list")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "two families are named 'pair-outcome'" in proc.stderr


def test_no_family_installed_says_how_to_install(monkeypatch):
    monkeypatch.setattr(registry, "entry_points", lambda group: [])
    registry._families.cache_clear()
    try:
        with pytest.raises(registry.FamilyRegistryError, match="install the package: make install"):
            registry.families()
    finally:
        monkeypatch.undo()
        registry._families.cache_clear()
    assert registry.families()


def test_the_registry_order_keeps_the_pairs_first():
    """The order of report parts, drift output and a kind's metrics (cll first for a
    causal LM); a family of the default rank (seegull) comes after the three."""
    assert [f.name for f in registry.families()][:3] == [
        "pair-outcome",
        "association-test",
        "choice-qa",
    ]
    assert next(iter(registry.metric_specs())) == "cll"


# ------------------------------------------------------- a family's own benchmarks

_SHIPPED_CSV = (
    ",Target_Stereotypical,Target_Anti-Stereotypical,Sentence\n"
    "0,['Alpha'],['Beta'],The neighbour is MASK\n"
    "1,['Beta'],['Alpha'],The visitor is MASK\n"
    "2,['Alpha'],['Beta'],The teacher is MASK\n"
)


def _shipping_family(site: Path, benchmark_id: str) -> Path:
    """A family package of its own, installed in ``site``, that ships one benchmark file
    in its package (no URL) and loads it with the pairs' loader."""
    import hashlib

    pkg = site / "shipfam"
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "data" / "tiny.csv").write_text(_SHIPPED_CSV, encoding="utf-8")
    digest = hashlib.sha256(_SHIPPED_CSV.encode()).hexdigest()
    (pkg / "benchmarks.toml").write_text(
        "schema_version = 1\n\n[sources.shipfam]\n"
        'repo = "example/shipfam"\ncommit = "' + "1" * 40 + '"\n'
        'licence = "test data"\ncitation = "test data"\n\n'
        f"[benchmarks.{benchmark_id}]\n"
        'source = "shipfam"\nformat = "indian-bhed"\naxis = "test"\nregion = "test"\n'
        f'path = "data/tiny.csv"\nsha256 = "{digest}"\nrows = 3\n',
        encoding="utf-8",
    )
    (pkg / "family.py").write_text(
        "from pathlib import Path\n"
        "from monitor.contract.capabilities import Metrics\n"
        "from monitor.contract.family import Builders, Family\n"
        "from monitor.families.pairs.family import FAMILY as PAIRS\n"
        "class Shipped(Builders):\n"
        "    def items(self):\n"
        "        return PAIRS.items()\n"
        "    def metrics(self):\n"
        "        return Metrics(specs=lambda family: [])\n"
        "FAMILY = Family(name='shipped-test', summary='a test family', item_kinds=(),\n"
        "    measure_kinds=('rate',), headline='bias_rate', outcomes=True, formats=(),\n"
        "    capabilities=Shipped(), benchmarks=Path(__file__).parent / 'benchmarks.toml')\n",
        encoding="utf-8",
    )
    _fake_distribution(site, "shipfam", {"shipped": "shipfam.family:FAMILY"})
    return pkg


def test_a_family_ships_its_own_pinned_benchmark(tmp_path, monitor_env):
    pkg = _shipping_family(tmp_path / "site", "shipped-tiny")
    listed = _cli(tmp_path / "site", "data", "list")
    assert listed.returncode == 0, listed.stderr
    assert "shipped-tiny" in listed.stdout
    fetched = _cli(tmp_path / "site", "data", "fetch", "-b", "shipped-tiny")
    assert fetched.returncode == 0, fetched.stderr
    assert "shipped-tiny: 3 items, 0 excluded rows; quality suite passed" in fetched.stderr
    # The shipped file is pinned: an edited copy is refused, never read.
    (pkg / "data" / "tiny.csv").write_text(_SHIPPED_CSV.replace("teacher", "doctor"))
    tampered = _cli(tmp_path / "site", "data", "fetch", "-b", "shipped-tiny")
    assert tampered.returncode != 0 and "Traceback" not in tampered.stderr
    assert "reinstall the family's package" in tampered.stderr


def test_a_family_benchmark_id_already_in_the_manifest_is_refused(tmp_path, monitor_env):
    _shipping_family(tmp_path / "site", "bhed-caste")
    proc = _cli(tmp_path / "site", "data", "list")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "both define benchmark id 'bhed-caste'" in proc.stderr
