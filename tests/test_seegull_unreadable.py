"""SeeGULL languages a tokenizer cannot read are skipped, each with its reason, and the
rest of the run scored (issue 48, item 4), through the CLI.

* A model that reads Devanagari but not Tamil: a tiny random Llama whose byte-level BPE
  tokenizer was trained on the Hindi file's own frames, identities and attributes (so a
  Devanagari character is one token or part of a longer one) and on nothing in Tamil
  script (every Tamil character is two or three byte tokens). Pinned as a local folder
  with ``snapshots add``, it is run on the mini Hindi and Tamil sets: Hindi is scored and
  stored, Tamil is named as skipped with its measured share, the run records why.
* SmolLM2 reads neither: the snapshot is refused (exit 3, nothing written), naming both
  languages, not only the first.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import duckdb
import pytest
from _models import byte_bpe, tiny_causal_lm
from test_cli_run import cli
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from monitor.benchmarks.load import load_benchmarks

SPLIT = re.compile(r"(\d+)% of the (\d+) tokens")


def _runs(db: Path) -> list[tuple[str, str]]:
    if not db.exists():
        return []
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT run_id, status FROM runs").fetchall()
    finally:
        con.close()


def _hindi_reader(folder: Path) -> None:
    """Save a tiny random Llama whose tokenizer was trained on Hindi SeeGULL text only."""
    (hindi,) = load_benchmarks(["seegull-hi"], options={"size": "full"})
    corpus = [t for it in hindi.items for t in it.texts()]
    tok = byte_bpe(corpus, 3000, ["<bos>", "<eos>", "<pad>"])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<bos>", eos_token="<eos>", pad_token="<pad>"
    )
    model = tiny_causal_lm(
        LlamaConfig,
        LlamaForCausalLM,
        len(fast),
        seed=48,
        initializer_range=0.02,  # the config's default, not TINY_SHAPE's wide init
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
    )
    model.save_pretrained(folder, safe_serialization=True)
    fast.save_pretrained(folder)


def test_a_language_the_tokenizer_cannot_read_is_skipped_the_rest_scored(
    monitor_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snaps = monitor_env / "snapshots"
    snaps.mkdir()
    monkeypatch.setenv("MONITOR_SNAPSHOTS_DIR", str(snaps))
    folder = monitor_env / "models" / "hindi-reader"
    cli("data", "fetch", "-b", "seegull-hi")  # from the mirror, verified
    _hindi_reader(folder)
    cli("snapshots", "add", str(folder), "--id", "hindi-reader")

    proc = cli(
        "run", "-s", "hindi-reader", "-b", "seegull-hi", "-b", "seegull-ta", "--size", "mini"
    )
    said = " ".join(proc.stderr.split())
    assert "hindi-reader: skipped: its tokenizer cannot represent seegull-ta (language 'ta')" in (
        said
    )
    assert "seegull-hi (language" not in said  # Hindi is read
    share, _tokens = map(int, SPLIT.search(said).groups())
    assert share > 50  # Tamil as byte fragments, far above the 10% limit
    ((run_id, status),) = _runs(Path(os.environ["MONITOR_DB"]))
    assert status == "complete"
    assert "seegull-hi" in proc.stdout and "seegull-ta" not in proc.stdout

    con = duckdb.connect(os.environ["MONITOR_DB"], read_only=True)
    try:
        scored = con.execute(
            "SELECT i.benchmark, count(*) FROM scores s JOIN items i USING (item_id) "
            "WHERE s.run_id = ? GROUP BY 1",
            [run_id],
        ).fetchall()
        env = json.loads(
            con.execute("SELECT environment FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]
        )
    finally:
        con.close()
    assert scored == [("seegull-hi", 72)]  # the mini Hindi set, every item
    assert list(env["skipped_benchmarks"]) == ["seegull-ta"]
    assert "byte fragments" in env["skipped_benchmarks"]["seegull-ta"]


def test_smollm2_reads_neither_language_and_is_refused_naming_both(monitor_env: Path) -> None:
    proc = cli(
        "run", "-s", "smollm2-135m-instruct-q4", "-b", "seegull-hi", "-b", "seegull-ta",
        "--size", "mini", check=False,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    said = " ".join(proc.stderr.split())
    for code in ("hi", "ta"):
        assert f"cannot represent seegull-{code} (language '{code}')" in said
    assert _runs(Path(os.environ["MONITOR_DB"])) == []
