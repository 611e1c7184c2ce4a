"""`bias-monitor ci try`: the repository's bias check, run here under act before pushing."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from monitor.terminal.output import err, out

app = typer.Typer(help="The pull-request check, locally (act).", no_args_is_help=True)


@app.command("try")
def try_(
    repo: Annotated[
        Path,
        typer.Argument(help="Your repository, whose workflow calls the bias check (default: .)."),
    ] = Path("."),
    workflow: Annotated[
        str | None,
        typer.Option(
            "--workflow",
            help="The calling workflow, e.g. .github/workflows/bias.yml (default: the one "
            "that uses bias-monitor's check).",
        ),
    ] = None,
    base: Annotated[
        str,
        typer.Option("--base", help="The pull request's base commit (baselines come from it)."),
    ] = "HEAD",
    work: Annotated[
        Path | None,
        typer.Option(
            "--work",
            help="Folder for the copy and the outputs (default: <cache>/ci-try); emptied first.",
        ),
    ] = None,
    print_only: Annotated[
        bool, typer.Option("--print", help="Prepare the copy and print the act command only.")
    ] = False,
) -> None:
    """Run your repository's bias check under act, as a pull request from the working tree
    (uncommitted files included), with this checkout's workflow and monitor in place of the
    published ones. Your repository is copied, never changed. Needs act: pip install -e
    '.[ci]'. Exits with the check's status; the summary is in the work folder's out/.
    """
    from monitor import paths
    from monitor.app import ci_try

    folder = work if work is not None else paths.cache_root() / "ci-try"
    plan = ci_try.plan(repo, folder, workflow=workflow, base=base)
    if print_only:
        out.print(f"cd {shlex.quote(str(plan.copy))} && {shlex.join(plan.command)}", soft_wrap=True)
        return
    err.print(f"running {plan.caller} under act in {plan.copy}", highlight=False)
    code = ci_try.run(
        plan, lambda line: out.print(line, markup=False, highlight=False, soft_wrap=True)
    )
    summary = plan.out / "summary.md"
    verdict = "passed" if code == 0 else f"failed (exit {code})"
    where = f"; summary: {summary}" if summary.is_file() else ""
    err.print(f"bias check {verdict}{where}; log: {plan.out / 'act.log'}", highlight=False)
    raise typer.Exit(code)
