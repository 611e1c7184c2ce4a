"""Click options built from typed option models, for a command whose flags a model owns.

A model's field is one option: ``json_schema_extra["flag"]`` its flag (or ``--x/--no-x``
pair), ``description`` its help, ``ge``/``le`` its bounds, its default the option's. The
options are made by typer itself, from a signature synthesised from the fields, so they
look and parse exactly as if they were written as parameters of the command (the same
metavars, bounds and defaults in ``--help``). At invocation the parsed values are
validated into model instances and handed over in ``ctx.meta``; the command function
reads them with ``parsed``. A field's validator that refuses a value is a usage error of
its flag (exit 2), as a click callback's would be.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel, ValidationError
from typer.core import TyperCommand

M = TypeVar("M", bound=BaseModel)
# typer's vendored click: a command's parameter (option or argument) and its context.
Param = Any
Context = typer.Context
_META_KEY = "monitor.option_models"


def _option(model: type[BaseModel], name: str) -> inspect.Parameter:
    """The typer parameter of one field: its flag, help, bounds and default."""
    field = model.model_fields[name]
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    bounds: dict[str, Any] = {}
    for rule in field.metadata:  # pydantic's ``ge``/``le`` constraints (annotated-types)
        for bound, option in (("ge", "min"), ("le", "max")):
            if getattr(rule, bound, None) is not None:
                bounds[option] = getattr(rule, bound)
    flag = extra["flag"]  # "--x", "--x/--no-x", or ["--x", "-x"] with a short form
    decls = [flag] if isinstance(flag, str) else [str(f) for f in flag]  # type: ignore[union-attr]
    info = typer.Option(*decls, help=field.description, **bounds)
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=field.default,
        annotation=Annotated[field.annotation, info],
    )


def _click_params(models: Sequence[type[BaseModel]]) -> list[Param]:
    """The click parameters typer makes for every field of ``models``, in field order."""
    fields = [_option(m, n) for m in models for n in m.model_fields]
    names = [p.name for p in fields]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # two models may not own one option: the command could not tell whose
        raise ValueError(f"option models declare {', '.join(twice)} more than once")

    def command(**_: Any) -> None:  # pragma: no cover - never called; typer reads it
        pass

    command.__signature__ = inspect.Signature(fields)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in fields}
    probe = typer.Typer(rich_markup_mode=None, add_completion=False)
    probe.command()(command)
    return list(typer.main.get_command(probe).params)


def _values(param: Param, value: Any) -> Any:
    """A parsed value as the command's own parameter would get it (typer's rule): a
    repeatable option given no value is its default (None), else a list."""
    if value is None or not getattr(param, "multiple", False):
        return value
    return None if param.default is None and not value else list(value)


def model_options_command(
    models: Callable[[], Sequence[type[BaseModel]]], after: str | None
) -> type[TyperCommand]:
    """A command class that adds the fields of ``models()`` as options, listed after the
    command's own parameter ``after`` (None: first), and hands them to the command
    validated. ``models`` is called when the command is built, not at import."""

    class ModelOptionsCommand(TyperCommand):
        def __init__(self, *args: Any, params: list[Param], **kwargs: Any) -> None:
            self.option_models = tuple(models())
            self.model_params = _click_params(self.option_models)
            at = 0 if after is None else [p.name for p in params].index(after) + 1
            params = [*params[:at], *self.model_params, *params[at:]]
            super().__init__(*args, params=params, **kwargs)

        def invoke(self, ctx: Context) -> Any:
            by_name = {p.name: p for p in self.model_params}
            values = {n: _values(by_name[n], ctx.params.pop(n)) for n in list(by_name)}
            ctx.meta[_META_KEY] = {
                m: _validated(ctx, m, values, by_name) for m in self.option_models
            }
            return super().invoke(ctx)

    return ModelOptionsCommand


def _validated(ctx: Context, model: type[M], values: dict[str, Any], params: dict[str, Param]) -> M:
    """``model`` from the parsed values; a refused value is a usage error of its flag."""
    try:
        return model.model_validate({n: values[n] for n in model.model_fields})
    except ValidationError as exc:
        first = exc.errors()[0]
        cause = (first.get("ctx") or {}).get("error")
        name = str(first["loc"][0])
        raise typer.BadParameter(
            str(cause) if cause is not None else first["msg"], ctx=ctx, param=params[name]
        ) from None


def parsed(ctx: Context, model: type[M]) -> M:
    """The validated instance of ``model`` that the command class put in ``ctx.meta``."""
    found = ctx.meta[_META_KEY][model]
    assert isinstance(found, model)
    return found
