"""Write a snapshot file for a model folder or a hub repo (``bias-monitor snapshots add``).

Everything that can be found out is found out here, so the user is asked for nothing
else: the kind from the folder's own config, the id from the folder name, the digest
from the files, a hub commit from the local Hugging Face cache. The file is written
under a temporary name, validated by loading it through the registry like any other
snapshot file, and only then renamed into place: a snapshot the registry would refuse
is never left behind.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from monitor.errors import UserInputError
from monitor.kinds import KINDS
from monitor.snapshots.local_dir import folder_files, layout_problem
from monitor.snapshots.model import SNAPSHOT_ID_MAX_CHARS, Snapshot, check_git_revision
from monitor.snapshots.registry import load_snapshot_file, refuse_shipped_id
from monitor.snapshots.resolve import (
    EventSink,
    conversion_digest,
    download_url,
    folder_digest,
    shown_url,
)

Convert = Callable[[Path, str], tuple[Path, str]]
"""A GGUF's conversion: (verified file, its sha256) -> (the converted folder, the name of the
conversion's own record inside it). The backends do it (``monitor.backends.gguf_cache``);
this room only pins what it wrote."""

# Kinds a folder can be pinned as (the ones whose loaders read a from_pretrained folder).
LOCAL_KINDS = tuple(k.name for k in KINDS.values() if "local-dir" in k.sources)
# Kinds a GGUF can be pinned as: the loaders that take a causal LM's folder.
GGUF_KINDS = ("hf-causal", "causal-lm-embeddings")
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class Pinned:
    """What ``snapshots add`` wrote: the file and the snapshot it holds, and for a folder
    or file outside the repository that holds the snapshot folder, the warning to show."""

    path: Path
    snapshot: Snapshot
    warning: str | None = None


def repository_of(folder: Path) -> Path | None:
    """The git work tree that holds ``folder`` (the first parent with a ``.git``), if any."""
    here = folder.resolve()
    for candidate in (here, *here.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def outside_repository(weights: Path, snapshots_dir: Path) -> str | None:
    """A warning when the weights lie outside the repository that holds the snapshot
    folder: the snapshot file is committed, the weights are not, and a CI runner that
    checks out the repository will not have them (docs/add-your-model.md, "Where the
    weights live"). None when they are inside it, or the snapshot folder is in no
    repository."""
    repo = repository_of(snapshots_dir)
    if repo is None or weights.resolve().is_relative_to(repo):
        return None
    return (
        f"{weights} lies outside the repository {repo} that holds the snapshot folder; a CI "
        "runner will not have it. Commit it inside the repository with Git LFS, push it to a "
        "hub repository (snapshots add ORG/NAME --revision COMMIT), or publish it and pin "
        "its address (snapshots add URL --sha256 HEX); see docs/add-your-model.md"
    )


def sanitise_id(name: str) -> str:
    """A snapshot id from a folder or repo name: lower case, runs of characters outside
    ``[a-z0-9._-]`` become ``-``, starting with a letter or digit (the id rule)."""
    text = re.sub(r"[^a-z0-9._-]+", "-", name.lower())
    text = re.sub(r"-{2,}", "-", text).lstrip("._-").rstrip("-")
    if not text:
        raise UserInputError(f"cannot make a snapshot id from {name!r}; give one with --id NAME")
    if len(text) > SNAPSHOT_ID_MAX_CHARS:
        raise UserInputError(
            f"a snapshot id from {name[:40]!r}… would be {len(text)} characters, more than "
            f"{SNAPSHOT_ID_MAX_CHARS}; give a shorter one with --id NAME"
        )
    return text


def detect_kind(folder: Path) -> str:
    """The snapshot kind a model folder is, from its own files.

    ``modules.json`` or ``config_sentence_transformers.json``: sentence-transformers;
    otherwise ``config.json``'s ``architectures``: ``*ForCausalLM`` is hf-causal,
    ``*ForMaskedLM`` hf-mlm. Anything else asks for ``--kind``.
    """
    if (folder / "modules.json").is_file() or (
        folder / "config_sentence_transformers.json"
    ).is_file():
        return "sentence-transformers"
    config = folder / "config.json"
    if not config.is_file():
        raise UserInputError(
            f"{folder} has no config.json; save the model with save_pretrained, or give --kind"
        )
    try:
        archs = json.loads(config.read_text(encoding="utf-8")).get("architectures") or []
    except (OSError, ValueError, AttributeError) as exc:
        raise UserInputError(f"{config} is not readable JSON: {exc}") from exc
    if any(str(a).endswith(("ForCausalLM", "LMHeadModel")) for a in archs):
        return "hf-causal"
    if any(str(a).endswith("ForMaskedLM") for a in archs):
        return "hf-mlm"
    found = ", ".join(map(str, archs)) or "none"
    raise UserInputError(
        f"cannot tell the kind of {folder} from config.json architectures ({found}); "
        f"give --kind, one of: {', '.join(LOCAL_KINDS)}"
    )


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _local_source(
    folder: Path, snapshots_dir: Path, type_name: str, label: str, pins: str
) -> tuple[str, str, str | None]:
    """A local file or folder's ``[source]`` table (its type, its path as the snapshot file
    records it, then ``pins``: the TOML lines that pin its bytes), how messages name it,
    and the warning when it lies outside the snapshot folder's repository."""
    path_text = _relative(folder, snapshots_dir)
    body = f'[source]\ntype = "{type_name}"\npath = {_toml_string(path_text)}\n' + pins
    return body, f"{label} {path_text}", outside_repository(folder, snapshots_dir)


def _relative(folder: Path, snapshots_dir: Path) -> str:
    """The folder's path relative to the snapshot file when it can be written so (the
    two live in one repository), else absolute."""
    try:
        return Path(os.path.relpath(folder.resolve(), snapshots_dir.resolve())).as_posix()
    except ValueError:  # another drive (Windows)
        return folder.resolve().as_posix()


def _hub_cache_dir() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def cached_hub_revision(repo: str) -> str | None:
    """The commit ``refs/main`` points to in the local Hugging Face cache, if any."""
    ref = _hub_cache_dir() / f"models--{repo.replace('/', '--')}" / "refs" / "main"
    try:
        text = ref.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text if re.fullmatch(r"[0-9a-f]{40}", text) else None


def _cached_hub_folder(repo: str, revision: str) -> Path | None:
    folder = _hub_cache_dir() / f"models--{repo.replace('/', '--')}" / "snapshots" / revision
    return folder if folder.is_dir() else None


def pin(
    target: str,
    snapshots_dir: Path,
    *,
    snapshot_id: str | None = None,
    kind: str | None = None,
    revision: str | None = None,
    sha256: str | None = None,
    gated: bool = False,
    force: bool = False,
    convert: Convert | None = None,
    cache_dir: Path | None = None,
    on_event: EventSink | None = None,
) -> Pinned:
    """Write ``<snapshots_dir>/<id>.toml`` for a folder (``local-dir``, with its digest),
    a GGUF file (``gguf-file``: its sha256 and its conversion's digest), an http(s)
    address with ``sha256`` (``url``, downloaded, verified and converted) or a hub repo
    id (``hf-hub`` at a commit) and return it, validated."""
    if kind is not None and kind not in LOCAL_KINDS:
        raise UserInputError(f"--kind {kind!r}: use one of {', '.join(LOCAL_KINDS)}")
    if gated and not (_HUB_ID.match(target) and not Path(target).expanduser().exists()):
        raise UserInputError("--gated is for a hub repo id (ORG/NAME)")
    if sha256 is not None and not re.fullmatch(r"[0-9a-f]{64}", sha256):
        raise UserInputError("--sha256: give the file's sha256 as 64 lower-case hex digits")
    folder = Path(target).expanduser()
    warning = None
    emit = on_event or (lambda _m: None)
    if target.startswith(("http://", "https://")):
        if sha256 is None:
            raise UserInputError(
                f"{shown_url(target)}: give --sha256 HEX, the file's sha256 (an address "
                "alone pins nothing: what it serves can change)"
            )
        if kind is not None and kind not in GGUF_KINDS:
            raise UserInputError(f"a GGUF is a causal LM: --kind {' or '.join(GGUF_KINDS)}")
        name = PurePosixPath(shown_url(target)).name
        sid = snapshot_id or sanitise_id(name.removesuffix(".gguf") or "weights")
        from monitor import paths

        cache = Path(cache_dir) if cache_dir is not None else paths.cache_root()
        path = download_url(sid, target, sha256, cache, emit)
        detected, converted = _converted(path, sha256, convert)
        kind = kind or detected
        body = (
            f'[source]\ntype = "url"\nurl = {_toml_string(target)}\nsha256 = "{sha256}"\n'
            f'format = "gguf"\nconverted_digest = "{converted}"\n'
        )
        what = f"GGUF at {shown_url(target)}"
    elif folder.is_file() and folder.suffix.lower() == ".gguf":
        if revision is not None:
            raise UserInputError("--revision is for a hub repo id, not a file")
        if kind is not None and kind not in GGUF_KINDS:
            raise UserInputError(f"a GGUF is a causal LM: --kind {' or '.join(GGUF_KINDS)}")
        from monitor.snapshots.local_dir import hash_file

        sid = snapshot_id or sanitise_id(folder.resolve().name.removesuffix(".gguf"))
        emit(f"hashing {folder.name}")
        _, file_sha = hash_file(folder)
        if sha256 is not None and sha256 != file_sha:
            raise UserInputError(f"{folder} has sha256 {file_sha}, not the --sha256 given")
        detected, converted = _converted(folder, file_sha, convert)
        kind = kind or detected
        body, what, warning = _local_source(
            folder,
            snapshots_dir,
            "gguf-file",
            "GGUF file",
            f'sha256 = "{file_sha}"\nconverted_digest = "{converted}"\n',
        )
    elif folder.is_dir():
        if revision is not None:
            raise UserInputError("--revision is for a hub repo id, not a folder")
        sid = snapshot_id or sanitise_id(folder.resolve().name)
        kind = kind or detect_kind(folder)
        problem = layout_problem(folder, [rel for rel, _ in folder_files(folder)])
        if problem is not None:  # what the loader would read must be what is pinned
            raise UserInputError(f"cannot pin {folder}: {problem}")
        body, what, warning = _local_source(
            folder,
            snapshots_dir,
            "local-dir",
            "model folder",
            f'digest = "{folder_digest(folder)}"\n',
        )
    elif _HUB_ID.match(target) and not folder.exists():
        revision = revision or cached_hub_revision(target)
        if revision is None:
            raise UserInputError(
                f"{target} is not in the local Hugging Face cache; give --revision, the "
                "40-hex commit id to pin (the model page's history lists them)"
            )
        try:
            check_git_revision(revision)
        except ValueError as exc:
            raise UserInputError(f"--revision {revision!r}: {exc}") from None
        cached = _cached_hub_folder(target, revision)
        if kind is None:
            if cached is None:
                raise UserInputError(
                    f"{target}@{revision[:12]} is not in the local cache, so its kind cannot "
                    f"be read from its config; give --kind, one of: {', '.join(LOCAL_KINDS)}"
                )
            kind = detect_kind(cached)
        sid = snapshot_id or sanitise_id(target.split("/", 1)[1])
        body = (
            f'[source]\ntype = "hf-hub"\nrepo = {_toml_string(target)}\nrevision = "{revision}"\n'
            + ("gated = true\n" if gated else "")
        )
        what = f"hub repo {target} at commit {revision}"
    else:
        raise UserInputError(
            f"{target} is neither a model folder, a .gguf file, an http(s) address nor a hub "
            "repo id (ORG/NAME); give the folder saved with save_pretrained, a GGUF file, an "
            "address with --sha256, or ORG/NAME with --revision"
        )
    if snapshot_id is not None:
        sid = snapshot_id
        if len(sid) > SNAPSHOT_ID_MAX_CHARS:  # it names the file written below
            raise UserInputError(
                f"--id: {len(sid)} characters; a snapshot id has at most {SNAPSHOT_ID_MAX_CHARS}"
            )
        if sanitise_id(sid) != sid:
            raise UserInputError(
                f"--id {sid!r}: use lower-case letters, digits, '.', '_' and '-', starting "
                f"with a letter or digit (e.g. {sanitise_id(sid)})"
            )
    path = snapshots_dir / f"{sid}.toml"
    if path.exists() and not force:
        raise UserInputError(f"{path} exists; pass --force to replace it")
    text = (
        f"# Written by bias-monitor snapshots add: {what}.\n"
        f"id = {_toml_string(sid)}\nkind = {_toml_string(kind)}\n"
        f"display_name = {_toml_string(sid)}\n\n{body}"
    )
    pending = snapshots_dir / f".pending-{os.getpid()}"
    try:
        pending.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserInputError(
            f"cannot write to snapshot folder {snapshots_dir}: {exc.strerror or exc}"
        ) from exc
    try:
        draft = pending / f"{sid}.toml"
        draft.write_text(text, encoding="utf-8")
        checked = load_snapshot_file(draft)  # the registry's own rules, id = file name
        refuse_shipped_id(path)  # and never a shipped id outside the shipped folder
        os.replace(draft, path)
    finally:
        for leftover in pending.iterdir():
            leftover.unlink()
        pending.rmdir()
    return Pinned(path=path, snapshot=checked.with_file(path), warning=warning)


def _converted(gguf: Path, sha256: str, convert: Convert | None) -> tuple[str, str]:
    """(kind, converted digest) of a verified GGUF, converting it once (cached)."""
    if convert is None:
        raise UserInputError("pinning a GGUF needs its conversion (bias-monitor snapshots add)")
    folder, record = convert(gguf, sha256)
    return detect_kind(folder), conversion_digest(folder, leave_out=record)
