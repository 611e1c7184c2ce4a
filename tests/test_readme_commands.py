"""Every command line in the README's code blocks is exercised by a test.

The README is what a newcomer types first, so a command in it that no test runs is a
command that can silently stop working. Each line of a README code block that starts with
``bias-monitor``, ``make`` or ``scripts/`` (after any ``NAME=value`` environment
assignments) must be one of:

* ``RUN_HERE``: cheap enough that a test in this file runs it as written;
* ``MAPPED``: run by another test, named by its node id; that test file must contain the
  command's words (its subcommands, options and environment variables), so a mapping
  cannot point at a test of something else;

A README command in none of these fails ``test_every_readme_command_is_exercised``; an
entry no longer in the README fails ``test_no_stale_entries``. Keep the README's command
list short so that this stays honest.
"""

from __future__ import annotations

import ast
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
COMMAND_START = re.compile(r"^(bias-monitor|make|scripts/)")
ENV_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")

RUN_HERE = {
    "make docs": "test_make_docs_builds_strict",
}
E2E = (
    "tests/test_local_dir_snapshot.py"
    "::test_pinned_folder_is_scored_compared_and_refused_when_changed"
)
MAPPED = {
    "bias-monitor run -s gemma-3-270m-q4 -b seegull-hi -b seegull-ta --size mini": (
        "tests/test_seegull.py::test_gemma_mini_run_drift_and_report"
    ),
    "make run": "tests/test_readme_quickstart.py::test_make_run_prints_what_the_readme_shows",
    "make test": "tests/test_readme_commands.py::test_ci_runs_make_test_and_make_docs",
    "MONITOR_SNAPSHOTS_DIR=my-snapshots bias-monitor snapshots add ./models/my-finetune "
    "--id my-finetune": E2E,
    "MONITOR_SNAPSHOTS_DIR=my-snapshots bias-monitor run -s my-finetune -b bhed-caste "
    "-b bhed-religion": E2E,
    "bias-monitor drift --snapshot my-finetune --baseline-snapshot smollm2-135m-instruct-q4 "
    "--fail-on regression": E2E,
    "bias-monitor run -s smollm2-135m-instruct-q4 -b bharatbbq-caste -b bbq-religion --size mini": (
        "tests/test_cli_choice_qa_run.py::test_run_scores_choice_questions_and_reruns_identically"
    ),
}


def readme_commands(text: str) -> list[str]:
    """The command lines of the text's fenced code blocks, comments stripped, whitespace
    normalised (``shlex`` tokens joined by one space)."""
    commands: list[str] = []
    in_block = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_block = not in_block
            continue
        if not in_block:
            continue
        tokens = shlex.split(line, comments=True)
        words = [t for t in tokens if not ENV_ASSIGNMENT.match(t)]
        if words and COMMAND_START.match(words[0]):
            commands.append(" ".join(tokens))
    return commands


def command_words(command: str) -> list[str]:
    """What a test of ``command`` must mention: its environment variables, the make
    target or the subcommands, and every option name (values are the user's own)."""
    tokens = shlex.split(command)
    env = [t.split("=", 1)[0] for t in tokens if ENV_ASSIGNMENT.match(t)]
    rest = [t for t in tokens if not ENV_ASSIGNMENT.match(t)]
    words = list(env)
    head, args = rest[0], rest[1:]
    if head == "make":
        return [*words, "make", *args]
    if head != "bias-monitor":
        words.append(Path(head).name)
    for arg in args:  # subcommands: the bare words before the first option or path
        if not re.fullmatch(r"[a-z][a-z0-9-]*", arg):
            break
        words.append(arg)
    words += [a.split("=", 1)[0] for a in args if a.startswith("-")]
    return words


def test_extraction_on_a_sample() -> None:
    """The parser itself: fences, comments, environment prefixes and non-command lines."""
    sample = (
        "text bias-monitor outside\n```bash\nmake run   # a comment\n"
        "FOO=1 bias-monitor drift --fail-on regression\necho no\n```\n"
        "```toml\nid = 'x'\n```\n"
    )
    assert readme_commands(sample) == ["make run", "FOO=1 bias-monitor drift --fail-on regression"]
    assert command_words("FOO=1 bias-monitor drift --fail-on regression") == [
        "FOO",
        "drift",
        "--fail-on",
    ]
    assert command_words("bias-monitor snapshots add ./m --id x") == [
        "snapshots",
        "add",
        "--id",
    ]


def test_every_readme_command_is_exercised() -> None:
    commands = readme_commands(README.read_text(encoding="utf-8"))
    assert commands, "no commands found in the README's code blocks"
    known = RUN_HERE.keys() | MAPPED.keys()
    unmapped = [c for c in commands if c not in known]
    assert not unmapped, (
        "README commands no test exercises; run them here (RUN_HERE) or map them to the "
        f"test that runs them (MAPPED): {unmapped}"
    )


def test_no_stale_entries() -> None:
    commands = set(readme_commands(README.read_text(encoding="utf-8")))
    stale = [c for c in (*RUN_HERE, *MAPPED) if c not in commands]
    assert not stale, f"entries for commands no longer in the README: {stale}"


def test_run_here_entries_are_tests_of_this_file() -> None:
    names = {n.name for n in ast.parse(Path(__file__).read_text()).body if hasattr(n, "name")}
    assert set(RUN_HERE.values()) <= names


@pytest.mark.parametrize("command", sorted(MAPPED))
def test_mapped_test_exists_and_names_the_command(command: str) -> None:
    path, _, name = MAPPED[command].partition("::")
    source = (ROOT / path).read_text(encoding="utf-8")
    tests = {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)}
    assert name in tests, f"{MAPPED[command]}: no such test"
    missing = [w for w in command_words(command) if w not in source]
    assert not missing, f"{path} does not mention {missing} of {command!r}"


def test_ci_runs_make_test_and_make_docs() -> None:
    """`make test` is run by CI itself (.ci/run, the README says so), as is `make docs`."""
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "make test" in lines and "make docs" in lines


def test_make_docs_builds_strict() -> None:
    """`make docs` as the README gives it: mkdocs from its lock file, strict, so a broken
    link or a page left out of mkdocs.yml fails."""
    proc = subprocess.run(["make", "docs"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (ROOT / "site" / "index.html").is_file()
    assert (ROOT / "site" / "performance" / "index.html").is_file()


def test_readme_caller_workflow_is_the_example_file() -> None:
    """The README's caller workflow is the consumer example the act test runs, byte for
    byte, so the workflow a reader copies is the one CI ran green."""
    marker = "<!-- caller workflow: examples/consumer-repo/.github/workflows/bias.yml -->"
    text = README.read_text(encoding="utf-8")
    assert marker in text
    block = text.split(marker, 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    example = ROOT / "examples" / "consumer-repo" / ".github" / "workflows" / "bias.yml"
    assert block == example.read_text(encoding="utf-8")
