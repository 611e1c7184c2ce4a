"""The choice-question family's options of ``run`` (BBQ, BharatBBQ), as one typed model.

Declared like every run option model (``json_schema_extra["flag"]`` the flag,
``description`` its help); the CLI builds the click options from it. Why these are the
family's: only its loaders take a sample size (``ResultFamily.sized``) and only the
BharatBBQ loader pairs a translation with the pinned English files row by row.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from monitor.contract.flags import flag_field


class ChoiceRunOptions(BaseModel):
    """What a choice-question run adds to the core options: sample size, translation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    size: str | None = flag_field(
        "--size",
        None,
        "Choice-question benchmarks (bbq-*, bharatbbq-*): mini (a few whole "
        "templates per category, both contexts and polarities), default (a few hundred "
        "items per category) or full (every row). Sentence pairs (bhed-*, crows-pairs): "
        "mini keeps 24 whole templates per axis, taken in turns from the identities the "
        "stereotypes name (a quick look); default and full, every row.",
    )
    translations: Path | None = flag_field(
        "--translations",
        None,
        "BharatBBQ benchmarks (bharatbbq-*): a folder holding your translation "
        "of the files, row-parallel to the pinned English ones and named like them "
        "(Caste_examples.csv, same columns); score it instead of the English text. "
        "Needs --language. Drift pairs its items with an English run's by source id.",
    )
    language: str | None = flag_field(
        "--language",
        None,
        "With --translations: the BCP-47 code of the translation (e.g. hi); recorded with the run.",
    )

    def loader_options(self) -> dict[str, str]:
        """The loader options these flags ask for (``size``; ``translations`` and
        ``language`` together), refused in one line when the size is not one, either
        translation flag is missing, the folder is not one or the code is not a language
        code: a run must never score a translation it cannot name."""
        import re

        from monitor.errors import UserInputError

        if self.size not in (None, "mini", "default", "full"):
            raise UserInputError(f"unknown --size {self.size!r}; use mini, default or full")
        sized = {"size": self.size} if self.size else {}
        folder, language = self.translations, self.language
        if folder is None and language is None:
            return sized
        if folder is None:
            raise UserInputError("--language applies with --translations DIR (a translation)")
        if not language:
            raise UserInputError(
                "--translations needs --language CODE (e.g. hi), the translation's"
            )
        if not re.fullmatch(r"[a-z]{2,3}(-[A-Za-z0-9]{1,8})*", language):
            raise UserInputError(f"--language {language!r} is not a BCP-47 code such as hi or mr")
        path = folder.expanduser()
        if not path.is_dir():
            raise UserInputError(f"--translations {folder}: no such folder")
        return {**sized, "translations": str(path.resolve()), "language": language}
