"""Tell GitHub what the monitor found: one issue per flagged regression, one PR comment.

    python scripts/ci/github_report.py issues DRIFT_JSON [--run-url URL] [--dry-run]
    python scripts/ci/github_report.py pr-comment --pr N MARKDOWN_FILE [--dry-run]

``issues`` reads ``bias-monitor drift --format json`` and keeps one open issue (label
``bias-regression``) per snapshot × benchmark × subject that regressed (a pair axis, an
association test, or a question family's category and measure): it opens it the first
night, comments on it each further night the regression is flagged, and closes it on the
first night that compares that snapshot × axis again without a regression. Axes that were
not compared tonight keep their issue as it is. ``pr-comment`` creates or updates one
comment on the pull request (found by a hidden marker), so reruns do not pile up comments.

Talks to the REST API at $GITHUB_API_URL for $GITHUB_REPOSITORY with $GITHUB_TOKEN (the
workflow token: ``issues: write`` / ``pull-requests: write``); the token is sent as a header
and never printed. Standard library only, so the comment job installs nothing.
``--dry-run`` prints what it would do and sends nothing (used under act, which has no
GitHub to talk to). Issue bodies hold only ids and numbers from the drift JSON
(snapshot ids, benchmark ids, rates, p-values), never a benchmark sentence or model output.

Exit codes: 0 done; 1 GitHub refused a request; 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LABEL = "bias-regression"
_ID = r"([a-z0-9._-]+)"
MARKER = re.compile(rf"<!-- bias-monitor-regression: {_ID} {_ID} {_ID} -->")
PR_MARKER = "<!-- bias-monitor-pr-check -->"


@dataclass(frozen=True)
class Finding:
    """One compared snapshot × benchmark × axis of tonight's drift report."""

    snapshot: str
    benchmark: str
    axis: str
    verdict: str
    text: str  # a short, numbers-only description

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.snapshot, self.benchmark, self.axis)

    @property
    def marker(self) -> str:
        return f"<!-- bias-monitor-regression: {self.snapshot} {self.benchmark} {self.axis} -->"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _key(text: str) -> str:
    """A marker-safe part of an issue key (lower case, no spaces)."""
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-") or "-"


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def findings(drift: dict[str, Any]) -> list[Finding]:
    """Every comparison of a drift JSON, whatever its kind of result, keyed by snapshot ×
    benchmark × subject: pair axes (``comparisons``), association tests
    (``association_tests``: the test) and the families in their own folder
    (``family_comparisons``: axis and measure, e.g. ``caste.bias_ambig``)."""
    snapshot_of = {p["new_run_id"]: p["snapshot_id"] for p in drift.get("pairs", [])}

    def snapshot(c: dict[str, Any]) -> str:
        found = snapshot_of.get(c["new_run_id"])
        if found is None:
            raise ValueError(f"comparison for run {c['new_run_id']} has no pair in the report")
        return found

    runs = "run {new_run_id} vs baseline {baseline_run_id}"
    out = []
    for c in drift.get("comparisons", []):
        old, new = c["rate_old"], c["rate_new"]
        low, high = c["delta_ci"]
        text = (
            f"{c['benchmark']} / {c['axis']}: bias rate {_pct(old.get('value'))} → "
            f"{_pct(new.get('value'))} (paired Δ {_pct(c['delta'])}, 95% CI "
            f"[{_pct(low)}, {_pct(high)}]); {c['to_stereo']} item(s) moved towards the "
            f"stereotype, {c['to_anti']} away; McNemar p {c['p_mcnemar']}, BH-adjusted "
            f"{c['p_bh']}; " + runs.format(**c)
        )
        out.append(Finding(snapshot(c), c["benchmark"], _key(c["axis"]), c["verdict"], text))
    for c in drift.get("association_tests", []):
        low, high = c["delta_ci"]
        text = (
            f"{c['benchmark']} / {c['test']}: effect size d {_num(c['d_old'])} → "
            f"{_num(c['d_new'])} (Δd {_num(c['delta'])}, 95% CI [{_num(low)}, {_num(high)}]); "
            f"p {c['p']}, BH-adjusted {c['p_bh']}; " + runs.format(**c)
        )
        out.append(Finding(snapshot(c), c["benchmark"], _key(c["test"]), c["verdict"], text))
    for c in drift.get("family_comparisons", []):
        # The numbers are in the comparison's ``unit``: points (choice questions) or raw.
        points = c.get("unit") == "points"

        def num(x: float | None, points: bool = points) -> str:
            return _num(x) if not points or x is None else f"{x:+.1f}"

        unit = " points" if points else ""
        text = (
            f"{c['benchmark']} / {c['axis']} {c['measure']} ({c['scope']}): "
            f"{num(c['value_old'])} → {num(c['value_new'])}{unit} (Δ {num(c['delta'])}, "
            f"95% CI [{num(c['ci_low'])}, {num(c['ci_high'])}]); p {c['p_value']}, "
            f"BH-adjusted {c['p_adjusted']}; " + runs.format(**c)
        )
        subject = _key(f"{c['axis']}.{c['measure']}")
        out.append(Finding(snapshot(c), c["benchmark"], subject, c["verdict"], text))
    return out


def plan_issues(
    found: list[Finding], open_issues: list[dict[str, Any]]
) -> list[tuple[str, int | None, Finding]]:
    """(action, issue number, finding) with action in open / comment / close."""
    by_key: dict[tuple[str, str, str], int] = {}
    for issue in open_issues:
        m = MARKER.search(issue.get("body") or "")
        if m:
            by_key.setdefault((m.group(1), m.group(2), m.group(3)), issue["number"])
    actions: list[tuple[str, int | None, Finding]] = []
    for f in found:
        number = by_key.get(f.key)
        if f.verdict == "regression":
            actions.append(("comment" if number else "open", number, f))
        elif number is not None:
            actions.append(("close", number, f))
    return actions


class GitHub:
    def __init__(self, dry_run: bool) -> None:
        self.dry_run = dry_run
        self.repo = os.environ.get("GITHUB_REPOSITORY", "")
        self.api = os.environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
        self.token = os.environ.get("GITHUB_TOKEN", "")
        if not dry_run and (not self.token or not self.repo):
            raise ValueError("GITHUB_TOKEN and GITHUB_REPOSITORY must be set")

    def call(self, method: str, path: str, body: dict | None = None, **params: Any) -> Any:
        if self.dry_run:
            if method != "GET":
                print(f"dry run: would {method} {path} {json.dumps(body or {})[:300]}")
            return []
        url = f"{self.api}/repos/{self.repo}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        request = urllib.request.Request(
            url,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "Authorization": f"Bearer {self.token}",
                "Accept": "application/vnd.github+json",
                "Content-Type": "application/json",
                "X-GitHub-Api-Version": "2022-11-28",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                data = resp.read()
        except urllib.error.HTTPError as exc:
            # The response names the problem; the token is in a header and never echoed.
            detail = exc.read()[:200].decode(errors="replace")
            raise RuntimeError(f"GitHub {method} {path}: HTTP {exc.code}: {detail}") from None
        except urllib.error.URLError as exc:
            raise RuntimeError(f"GitHub {method} {path}: {exc.reason}") from None
        return json.loads(data) if data else None

    def paged(self, path: str, **params: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        page = 1
        while True:
            batch = self.call("GET", path, per_page=100, page=page, **params)
            items += batch
            if len(batch) < 100:
                return items
            page += 1


def sync_issues(gh: GitHub, drift: dict[str, Any], run_url: str | None) -> list[str]:
    open_issues = [
        i
        for i in gh.paged("/issues", state="open", labels=LABEL)
        if "pull_request" not in i  # the issues endpoint also lists pull requests
    ]
    done = []
    where = f"\n\nWorkflow run: {run_url}" if run_url else ""
    for action, number, f in plan_issues(findings(drift), open_issues):
        if action == "open":
            created = gh.call(
                "POST",
                "/issues",
                {
                    "title": f"Bias regression: {f.snapshot} on {f.benchmark} ({f.axis})",
                    "body": f"{f.marker}\nThe nightly monitor flagged a regression.\n\n"
                    f"{f.text}{where}\n\nThis issue is closed automatically on the first night "
                    "that compares this snapshot and axis again without a regression.",
                    "labels": [LABEL],
                },
            )
            number = created.get("number") if isinstance(created, dict) else None
            done.append(f"opened #{number}: {f.snapshot} {f.benchmark} {f.axis}")
        elif action == "comment":
            gh.call(
                "POST", f"/issues/{number}/comments", {"body": f"Still flagged: {f.text}{where}"}
            )
            done.append(f"commented on #{number}: {f.snapshot} {f.benchmark} {f.axis}")
        else:
            gh.call(
                "POST",
                f"/issues/{number}/comments",
                {"body": f"No regression flagged tonight ({f.verdict}): {f.text}{where}"},
            )
            gh.call("PATCH", f"/issues/{number}", {"state": "closed", "state_reason": "completed"})
            done.append(f"closed #{number}: {f.snapshot} {f.benchmark} {f.axis}")
    return done


def pr_comment(gh: GitHub, pr: int, markdown: str) -> str:
    body = f"{PR_MARKER}\n{markdown}"
    if len(body) > 60000:  # GitHub's limit is 65 536 characters
        body = body[:60000] + "\n\n… (truncated; the full report is in the job summary)"
    for comment in gh.paged(f"/issues/{pr}/comments"):
        if PR_MARKER in (comment.get("body") or ""):
            gh.call("PATCH", f"/issues/comments/{comment['id']}", {"body": body})
            return f"updated comment {comment['id']} on #{pr}"
    gh.call("POST", f"/issues/{pr}/comments", {"body": body})
    return f"commented on #{pr}"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    i = sub.add_parser("issues")
    i.add_argument("drift_json", type=Path)
    i.add_argument("--run-url")
    i.add_argument("--dry-run", action="store_true")
    c = sub.add_parser("pr-comment")
    c.add_argument("markdown", type=Path)
    c.add_argument("--pr", type=int, required=True)
    c.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    try:
        if args.what == "issues":
            drift = json.loads(args.drift_json.read_text())
            lines = sync_issues(GitHub(args.dry_run), drift, args.run_url)
            print("\n".join(lines) if lines else "no regression issue to open, update or close")
        else:
            print(pr_comment(GitHub(args.dry_run), args.pr, args.markdown.read_text()))
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
