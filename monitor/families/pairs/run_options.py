"""The sentence-pair family's options of ``run``, as one typed model.

Each field is one ``run`` flag: ``json_schema_extra["flag"]`` names it (a boolean's
``--x/--no-x`` pair included), ``description`` is its help text and ``ge``/``le`` its
bounds; the CLI builds the click option from these, so the flag, its help and its default
are declared once, here. Why these are the family's: the metric panel is scored by the
pairs' panel planner (``panel_planner``), and the Indic-Bias templates and the judged
generation task are the pairs' (``indic_official``, ``judged_task``); no other family
reads them. Plain pydantic, no CLI library: a Python caller builds it directly.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from monitor.contract.flags import flag_field


class PairRunOptions(BaseModel):
    """What a pair run adds to the core options: its metric panel and Indic-Bias."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    panel: bool = flag_field(
        "--panel/--no-panel",
        True,
        "With a log-probability metric (cll, cll-reference, ull) on a causal LM, "
        "local or served by vLLM: also score the metric panel in the same pass (cll and "
        "ull, and what --metrics adds; shown beside the bias rate). ull reads cll's "
        "sentences, so the default panel costs about what cll alone does. --no-panel "
        "scores the run's metric alone.",
    )
    panel_metrics: list[str] | None = flag_field(
        "--metrics",
        None,
        "Add metrics to the panel (repeatable or comma-separated): cll-reference, "
        "the seed code's no-BOS variant kept for parity with published numbers, is "
        "scored only when asked (its sequences share no forward pass with cll's: about "
        "twice the scoring time).",
    )
    indic_bias: Path | None = flag_field(
        "--indic-bias",
        None,
        "Folder with a downloaded copy of the gated Hugging Face dataset "
        "ai4bharat/Indic-Bias (CC-BY-4.0): also score its official stereotype templates "
        "(see --indic-task). Without -b, only these are scored.",
    )
    indic_task: list[str] | None = flag_field(
        "--indic-task",
        None,
        "With --indic-bias (repeatable): plausibility, plausibility-none, "
        "judgement, judgement-none, generation. Default: plausibility and judgement.",
    )
    indic_partners: int = flag_field(
        "--indic-partners",
        2,
        "With --indic-bias: identities each template's identity is paired with "
        "(the paper used 10).",
        ge=1,
    )
    indic_limit: int | None = flag_field(
        "--indic-limit",
        None,
        "With --indic-bias: score this many templates per task, drawn with --seed.",
        ge=1,
    )
    judge: str | None = flag_field(
        "--judge",
        None,
        "With --indic-task generation: the snapshot id of the judge model (an "
        "openai-chat or openai-responses kind, e.g. served by vLLM).",
    )
    temperature: float = flag_field(
        "--temperature",
        0.8,
        "With --indic-task generation: sampling temperature of the generating "
        "model (the paper's default 0.8); recorded with the run.",
        ge=0.0,
        le=2.0,
    )
    generation_max_tokens: int = flag_field(
        "--generation-max-tokens",
        512,
        "With --indic-task generation: longest answer of the generating model "
        "(the paper allowed 2048; a server's context must hold the prompt and this).",
        ge=1,
    )
    judge_max_tokens: int = flag_field(
        "--judge-max-tokens",
        400,
        "With --indic-task generation: longest answer of the judge (its JSON verdict).",
        ge=1,
    )

    def extra_panel_metrics(self) -> tuple[str, ...]:
        """The metrics ``--metrics`` adds to the panel, checked: panel metrics only, and
        not together with ``--no-panel`` (which scores the run's metric alone)."""
        from monitor.errors import UserInputError
        from monitor.metrics.panel import PANEL_METRICS

        values = self.panel_metrics or ()
        names = tuple(dict.fromkeys(n.strip() for v in values for n in v.split(",") if n.strip()))
        unknown = [n for n in names if n not in PANEL_METRICS]
        if unknown:
            raise UserInputError(
                f"--metrics {', '.join(unknown)}: not a panel metric; use "
                f"{', '.join(PANEL_METRICS)} (the run's own metric is --metric)"
            )
        if names and not self.panel:
            raise UserInputError("--metrics adds to the metric panel; --no-panel scores none")
        return names

    def check_indic(self) -> None:
        """The Indic-Bias task options mean nothing without the dataset's folder."""
        from monitor.errors import UserInputError

        if self.indic_bias is None and (self.indic_task or self.indic_limit or self.judge):
            raise UserInputError("--indic-task, --indic-limit and --judge need --indic-bias DIR")
