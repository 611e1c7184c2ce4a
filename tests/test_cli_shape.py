"""The CLI parses, calls the application layer and renders (issue 45): every typer command
function in monitor/cli is at most 60 lines (def line to its end, as ``ast`` counts) and
takes at most 12 parameters; the flags that typed option models own are still all listed
in ``--help``."""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys
from pathlib import Path

import typer

import monitor.cli
from monitor.cli.app import app

CLI = Path(monitor.cli.__file__).resolve().parent
MAX_LINES = 60
MAX_PARAMS = 12


def _command_functions() -> dict[str, object]:
    """Every registered command's function (by its command path), from typer's tree."""
    found: dict[str, object] = {}
    stack = [("", typer.main.get_command(app))]
    while stack:
        path, command = stack.pop()
        subcommands = getattr(command, "commands", None)
        if subcommands:
            stack += [(f"{path} {name}".strip(), c) for name, c in subcommands.items()]
        elif command.callback is not None:
            found[path] = inspect.unwrap(command.callback)
    return found


def _definition(function) -> ast.FunctionDef:
    """The ``def`` of ``function`` in its module's syntax tree."""
    source = Path(inspect.getsourcefile(function))
    first = function.__code__.co_firstlineno
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef) and node.name == function.__name__:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if start == first:
                return node
    raise AssertionError(f"no def of {function.__qualname__} in {source}")


def _shape(node: ast.FunctionDef) -> tuple[int, int]:
    a = node.args
    params = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
    params += (a.vararg is not None) + (a.kwarg is not None)
    return node.end_lineno - node.lineno + 1, params


def test_every_cli_command_is_short_and_takes_few_parameters() -> None:
    commands = {
        path: f
        for path, f in _command_functions().items()
        if CLI in Path(inspect.getsourcefile(f)).resolve().parents
    }
    assert {"run", "drift", "report", "show", "import bbq"} <= set(commands)
    too_big = {}
    for path, function in sorted(commands.items()):
        lines, params = _shape(_definition(function))
        if lines > MAX_LINES or params > MAX_PARAMS:
            too_big[path] = f"{lines} lines, {params} parameters"
    assert too_big == {}, f"over {MAX_LINES} lines or {MAX_PARAMS} parameters: {too_big}"


def test_run_help_lists_every_option_model_flag() -> None:
    """Each field of the option models (core and families') is a flag in ``run --help``."""
    from monitor.app.options import run_option_models

    flags = [
        str(f.json_schema_extra["flag"]).split("/")[0]
        for model in run_option_models()
        for f in model.model_fields.values()
    ]
    assert "--indic-partners" in flags and "--size" in flags and "--device" in flags
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", "run", "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    assert [f for f in flags if f not in proc.stdout] == []


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )


def test_flags_from_option_models_are_refused_as_usage_errors(tmp_path: Path) -> None:
    """A value a model's field refuses is a usage error of its flag (exit 2, nothing
    read or written), as when the flags were the command's own parameters."""
    db = tmp_path / "never.duckdb"
    for args, flag, why in (
        (("run", "--device", "tpu"), "'--device'", "must be auto, cpu, cuda or cuda:N"),
        (("run", "--indic-partners", "0"), "'--indic-partners'", "greater than or equal to 1"),
        (("drift", "--alpha", "0.9"), "'--alpha'", "less than or equal to 0.5"),
        (("report", "--confidence", "0.2"), "'--confidence'", "greater than or equal to 0.5"),
    ):
        proc = _cli(*args, "--db", str(db))
        assert proc.returncode == 2, (args, proc.stderr)
        assert f"Invalid value for {flag}: " in proc.stderr and why in proc.stderr, proc.stderr
    assert not db.exists()
