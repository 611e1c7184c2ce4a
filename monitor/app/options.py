"""The typed option models of ``run``: the core's and, through one lookup, the families'.

Every ``run`` flag is a field of one of these models (``json_schema_extra["flag"]`` the
flag, ``description`` its help, ``ge``/``le`` its bounds); the CLI builds its click options
from them (``monitor.cli.model_options``) and hands the command validated instances, and a
Python caller builds the same instances for ``monitor.app.run``. Which flags are the
core's: the model backend's (``BackendOptions``: any kind of snapshot has a device) and
what any run records or reads (``ScoringOptions``: repeats, metric, seed, trigger,
origin, resume, reuse; errata and controls are the benchmark manifest's, declared for any
benchmark in ``data/benchmarks.toml`` and ``data/errata.toml``, not one family's).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator

from monitor.contract.flags import flag_field


class BackendOptions(BaseModel):
    """Where and how the model runs: the same for every family."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    batch_size: int | None = flag_field("--batch-size", None, "Sequences per forward pass.", ge=1)
    device: str = flag_field("--device", "auto", "auto, cpu or cuda.")
    dtype: str = flag_field(
        "--dtype", "auto", "auto (fp32 on CPU, bf16 on CUDA), float32, bfloat16 or float16."
    )

    @field_validator("device")
    @classmethod
    def _device(cls, value: str) -> str:
        # A bad device is a usage error of the flag (exit 2 naming --device), caught as
        # the command line is parsed, before anything is loaded.
        if value not in ("auto", "cpu", "cuda") and not value.startswith("cuda:"):
            raise ValueError("must be auto, cpu, cuda or cuda:N")
        return value


class ScoringOptions(BaseModel):
    """What any run records, repeats and reads, whatever its family."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repeat: int = flag_field(
        "--repeat",
        1,
        "Score each snapshot N times (each is its own run; measures the noise floor).",
        ge=1,
    )
    metric: str | None = flag_field(
        "--metric",
        None,
        "Override the snapshot kind's default metric: cll (default for causal "
        "LMs and vLLM completions), cll-reference, ull; aul (masked LMs); forced-choice "
        "(default for chat APIs) or sampled-choice; on BBQ/BharatBBQ mc-loglik (causal "
        "LMs), mc-letter (default for chat APIs) or mc-letter-sampled. `snapshots list` "
        "shows each kind's.",
    )
    errata: str = flag_field(
        "--errata", "current", "'current' applies data/errata.toml; 'none' scores the raw files."
    )
    seed: int = flag_field("--seed", 0, "Recorded with the run.")
    trigger: str | None = flag_field(
        "--trigger", None, "Recorded with the run (default: $GITHUB_EVENT_NAME or 'manual')."
    )
    resume: bool = flag_field(
        "--resume/--no-resume",
        True,
        "Continue a killed run of the same configuration instead of starting anew.",
    )
    controls: bool = flag_field(
        "--controls/--no-controls",
        True,
        "Also score each benchmark's control set, shown beside its bias rate.",
    )
    origin: str | None = flag_field(
        "--origin",
        None,
        "Where this run is written, recorded with it: nightly, default-branch, "
        "pull-request, branch or local (default: $MONITOR_RUN_ORIGIN, else from the GitHub "
        "Actions event, else local). Only nightly and default-branch runs are reused.",
    )
    reuse: bool = flag_field(
        "--reuse/--no-reuse",
        True,
        "On a pull request (--origin pull-request), reuse the snapshot's latest "
        "complete run when the nightly or the default branch wrote it with the same "
        "fingerprint, instead of scoring; --no-reuse scores anyway.",
    )

    @field_validator("origin")
    @classmethod
    def _origin(cls, value: str | None) -> str | None:
        # A usage error of the flag (exit 2 naming --origin), before anything is loaded.
        from monitor.provenance import check_origin

        return None if value is None else check_origin(value)


def family_option_models() -> tuple[type[BaseModel], ...]:
    """The families' ``run`` option models (``Family.run().options``), in the registry's
    order; a family that adds no ``run`` option has none."""
    from monitor.contract.registry import families

    return tuple(m for f in families() if (m := f.run().options) is not None)


def core_option_models() -> tuple[type[BaseModel], ...]:
    """The option models of ``run`` that no family adds: the backend's, then what any run
    records."""
    return (BackendOptions, ScoringOptions)


def run_option_models() -> tuple[type[BaseModel], ...]:
    """Every option model of ``run``, in the order its help lists them: the backend's,
    what any run records, then each family's."""
    return (*core_option_models(), *family_option_models())
