"""What a workflow should score: the job matrices of nightly.yml and pr-check.yml.

    python3 scripts/ci/plan.py nightly [--only ID,ID]       # `nightly = true` ones (or these)
    python3 scripts/ci/plan.py changed --base SHA           # snapshots a PR adds or changes

Prints ``key=value`` lines for ``$GITHUB_OUTPUT``:

* ``local``: JSON list of local snapshot ids (weights in the image; the GPU runner);
* ``api``: JSON list of ``{"id", "secret"}`` for API snapshots, ``secret`` naming the one
  repository secret the job needs (the key, or for vLLM the server's URL); the job skips
  itself with a notice when that secret is not set;
* ``changed`` (``changed`` only): JSON list of ``{"id", "kind", "baselines"}``, plus
  ``alpha`` and ``fail_on``, the thresholds of the check from ``.github/bias-monitor.toml``.

Standard library only (tomllib), so it runs before anything is installed. The snapshot
files are validated properly by ``bias-monitor`` itself when the jobs score them.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOTS = Path("snapshots")
CONFIG = Path(".github/bias-monitor.toml")


def load(path: Path) -> dict:
    with path.open("rb") as fh:
        return tomllib.load(fh)


def secret_for(snapshot: dict) -> str:
    """The repository secret an API snapshot cannot run without."""
    source = snapshot.get("source", {})
    if source.get("provider") == "vllm" and source.get("base_url_env"):
        return source["base_url_env"]  # a vLLM server needs no key, but its address
    return source.get("api_key_env", "OPENAI_API_KEY")


def served(snapshot: dict) -> bool:
    """A model behind an HTTP API (its weights are not in the image), told by where its
    source points rather than by its kind's name."""
    return snapshot.get("source", {}).get("type") == "openai-api"


def nightly(root: Path, only: list[str] | None) -> dict[str, list]:
    snaps = {s["id"]: s for s in (load(p) for p in sorted((root / SNAPSHOTS).glob("*.toml")))}
    if only:
        unknown = sorted(set(only) - set(snaps))
        if unknown:
            raise SystemExit(f"error: unknown snapshot(s) {', '.join(unknown)}")
        snaps = {k: snaps[k] for k in only}
    else:  # not every file: a 7B or API snapshot is scored nightly only when asked for
        snaps = {k: s for k, s in snaps.items() if s.get("nightly") is True}
    local = [i for i, s in snaps.items() if not served(s)]
    api = [{"id": i, "secret": secret_for(s)} for i, s in snaps.items() if served(s)]
    return {"local": local, "api": api}


def changed_files(root: Path, base: str) -> list[Path]:
    """Snapshot TOMLs added, modified or renamed between the merge base and HEAD."""
    out = subprocess.run(
        ["git", "diff", "--name-only", "--diff-filter=AMR", f"{base}...HEAD", "--", "snapshots/"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [Path(line) for line in out.splitlines() if line.endswith(".toml")]


def changed(root: Path, base: str) -> dict[str, object]:
    entries = []
    for rel in changed_files(root, base):
        snap = load(root / rel)
        if rel.stem != snap.get("id"):
            raise SystemExit(f"error: {rel} has id {snap.get('id')!r}; it must equal the file name")
        entries.append(
            {"id": snap["id"], "kind": snap["kind"], "baselines": list(snap.get("baselines", []))}
        )
    plan = nightly(root, [e["id"] for e in entries]) if entries else {"local": [], "api": []}
    config = load(root / CONFIG).get("pr-check", {}) if (root / CONFIG).is_file() else {}
    alpha, fail_on = float(config.get("alpha", 0.05)), str(config.get("fail_on", "regression"))
    allow_skipped = config.get("allow_skipped", False)
    if not 0 < alpha <= 0.5 or fail_on not in ("regression", "robust", "any", "never"):
        raise SystemExit(
            f"error: {CONFIG}: need 0 < alpha <= 0.5, fail_on regression/robust/any/never"
        )
    if not isinstance(allow_skipped, bool):
        raise SystemExit(f"error: {CONFIG}: allow_skipped must be true or false")
    return {
        "changed": entries,
        **plan,
        "alpha": alpha,
        "fail_on": fail_on,
        "allow_skipped": "true" if allow_skipped else "false",
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    n = sub.add_parser("nightly")
    n.add_argument(
        "--only", default="", help="comma-separated snapshot ids (default: nightly = true ones)"
    )
    c = sub.add_parser("changed")
    c.add_argument("--base", required=True, help="the pull request's base commit")
    args = parser.parse_args(argv)
    if args.what == "nightly":
        only = [s.strip() for s in args.only.replace(" ", ",").split(",") if s.strip()]
        plan = nightly(ROOT, only or None)
    else:
        plan = changed(ROOT, args.base)
    for key, value in plan.items():
        text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
        print(f"{key}={text}")
    summary = ", ".join(f"{k}: {len(v)}" for k, v in plan.items() if isinstance(v, list))
    print(f"plan: {summary}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
