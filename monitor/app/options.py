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

from pydantic import BaseModel, ConfigDict, Field, field_validator


class BackendOptions(BaseModel):
    """Where and how the model runs: the same for every family."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    batch_size: int | None = Field(
        None,
        ge=1,
        description="Sequences per forward pass.",
        json_schema_extra={"flag": "--batch-size"},
    )
    device: str = Field(
        "auto", description="auto, cpu or cuda.", json_schema_extra={"flag": "--device"}
    )
    dtype: str = Field(
        "auto",
        description="auto (fp32 on CPU, bf16 on CUDA), float32, bfloat16 or float16.",
        json_schema_extra={"flag": "--dtype"},
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

    repeat: int = Field(
        1,
        ge=1,
        description="Score each snapshot N times (each is its own run; measures the noise floor).",
        json_schema_extra={"flag": "--repeat"},
    )
    metric: str | None = Field(
        None,
        description="Override the snapshot kind's default metric: cll (default for causal "
        "LMs and vLLM completions), cll-reference, ull; aul (masked LMs); forced-choice "
        "(default for chat APIs) or sampled-choice; on BBQ/BharatBBQ mc-loglik (causal "
        "LMs), mc-letter (default for chat APIs) or mc-letter-sampled. `snapshots list` "
        "shows each kind's.",
        json_schema_extra={"flag": "--metric"},
    )
    errata: str = Field(
        "current",
        description="'current' applies data/errata.toml; 'none' scores the raw files.",
        json_schema_extra={"flag": "--errata"},
    )
    seed: int = Field(0, description="Recorded with the run.", json_schema_extra={"flag": "--seed"})
    trigger: str | None = Field(
        None,
        description="Recorded with the run (default: $GITHUB_EVENT_NAME or 'manual').",
        json_schema_extra={"flag": "--trigger"},
    )
    resume: bool = Field(
        True,
        description="Continue a killed run of the same configuration instead of starting anew.",
        json_schema_extra={"flag": "--resume/--no-resume"},
    )
    controls: bool = Field(
        True,
        description="Also score each benchmark's control set, shown beside its bias rate.",
        json_schema_extra={"flag": "--controls/--no-controls"},
    )
    origin: str | None = Field(
        None,
        description="Where this run is written, recorded with it: nightly, default-branch, "
        "pull-request, branch or local (default: $MONITOR_RUN_ORIGIN, else from the GitHub "
        "Actions event, else local). Only nightly and default-branch runs are reused.",
        json_schema_extra={"flag": "--origin"},
    )
    reuse: bool = Field(
        True,
        description="On a pull request (--origin pull-request), reuse the snapshot's latest "
        "complete run when the nightly or the default branch wrote it with the same "
        "fingerprint, instead of scoring; --no-reuse scores anyway.",
        json_schema_extra={"flag": "--reuse/--no-reuse"},
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
