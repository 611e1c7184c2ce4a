"""Connecting to a store on DuckLake: an in-memory DuckDB with the lake attached as its
default database, its extensions loaded from their PyPI packages (never downloaded).

Credentials come only from the environment: libpq reads the ``PG*`` variables itself
(``PGPASSWORD``, ``PGPASSFILE``, ...), or a DuckDB secret does; for an ``s3://`` data path
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY`` (and ``AWS_SESSION_TOKEN``,
``AWS_REGION``, ``AWS_ENDPOINT_URL`` for an S3-compatible server) become a temporary
secret of this connection alone, never written anywhere.

The secrets among them — ``PGPASSWORD``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``
— are registered with the process's redactor before they are used, so no error, log line
or stored text can quote one (a value under ``redaction.MIN_SECRET_LEN`` characters, such
as moto's ``test``, is a word rather than a secret and is not: ``monitor.redaction``).
``AWS_ACCESS_KEY_ID`` is not registered: it is an identifier, the user name beside the
secret key's password (AWS's own comparison) — every signed request carries it as plain
text (``Credential=AKIA.../...`` in its Authorization header, or a presigned URL), AWS's
logs and errors name it, and it opens nothing without the secret key. Whatever their
length, the values reach only this connection: a failure to make the S3 secret is
reported without DuckDB's message (which could quote the statement), and libpq reads
``PGPASSWORD`` itself, never from SQL text.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import duckdb

from monitor.errors import UserInputError
from monitor.redaction import redact, register
from monitor.store import extensions, snapshot
from monitor.store.location import LakeLocation

ALIAS = "lake"
# What is registered with the redactor: the secrets, not the access key id (see above).
SECRET_ENV = ("PGPASSWORD", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


def _quoted(text: str) -> str:
    """A value inside a single-quoted SQL string (ATTACH and CREATE SECRET take literals)."""
    return "'" + text.replace("'", "''") + "'"


def connect(
    location: LakeLocation, *, read_only: bool, create: bool, as_of: snapshot.AsOf | None = None
) -> duckdb.DuckDBPyConnection:
    """A connection whose default database is the lake. ``create`` False: a catalog that
    does not exist yet is refused (a reader never creates a lake). ``as_of``: the lake as
    it was at that snapshot (``monitor.store.snapshot``)."""
    register(*(os.environ.get(name) for name in SECRET_ENV))
    if location.kind == "sqlite" and not create and not Path(location.target).is_file():
        raise UserInputError(
            f"no lake catalog at {location.target}; run `bias-monitor run` or an import "
            "with this --db first"
        )
    con = duckdb.connect()
    try:
        scanner = "sqlite_scanner" if location.kind == "sqlite" else "postgres_scanner"
        extensions.load(con, "ducklake", scanner, *(("httpfs",) if location.on_s3 else ()))
        if location.on_s3:
            _make_s3_secret(con, location)
        if location.kind == "sqlite" and create:
            _make_folder(Path(location.target).parent)  # after the extensions loaded
        options = [f"DATA_PATH {_quoted(location.data_path)}"]
        if read_only:
            options.append("READ_ONLY")
        if as_of is not None:
            options.append(snapshot.attach_option(as_of))
        con.execute(f"ATTACH {_quoted(location.url)} AS {ALIAS} ({', '.join(options)})")
        con.execute(f"USE {ALIAS}")
        con.execute("SET TimeZone = 'UTC'")
    except duckdb.Error as exc:
        con.close()
        if as_of is not None and (missing := snapshot.not_found(exc, location, as_of)):
            raise missing from None
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UserInputError(f"cannot open {location.label}: {redact(first)}") from None
    except BaseException:
        con.close()
        raise
    return con


def _make_folder(folder: Path) -> None:
    """The catalog's folder, as a file store's folders are made
    (``--db ducklake:sqlite:results/lake.sqlite`` on a fresh clone)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserInputError(f"cannot create folder {folder}: {exc.strerror}") from None


def _make_s3_secret(con: duckdb.DuckDBPyConnection, location: LakeLocation) -> None:
    """The connection's S3 secret; a failure is named without DuckDB's message, which
    could quote the statement and so the keys in it (a short key is not redacted)."""
    try:
        con.execute(_s3_secret())
    except duckdb.Error as exc:
        raise UserInputError(
            f"cannot open {location.label}: the S3 credentials in AWS_ACCESS_KEY_ID, "
            f"AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN were refused by DuckDB's "
            f"secret manager ({type(exc).__name__})"
        ) from None


def _s3_secret() -> str:
    """A temporary S3 secret of this connection from the ``AWS_*`` variables (credential
    chain lookups need the aws extension, which the lake does not ship)."""
    env = os.environ
    region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1"
    parts = ["TYPE s3", f"REGION {_quoted(region)}"]
    if env.get("AWS_ACCESS_KEY_ID"):
        parts.append(f"KEY_ID {_quoted(env['AWS_ACCESS_KEY_ID'])}")
        parts.append(f"SECRET {_quoted(env.get('AWS_SECRET_ACCESS_KEY', ''))}")
    if env.get("AWS_SESSION_TOKEN"):
        parts.append(f"SESSION_TOKEN {_quoted(env['AWS_SESSION_TOKEN'])}")
    endpoint = env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    if endpoint:
        split = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
        parts += [
            f"ENDPOINT {_quoted(split.netloc)}",
            "URL_STYLE 'path'",
            f"USE_SSL {'true' if split.scheme == 'https' else 'false'}",
        ]
    return f"CREATE OR REPLACE TEMPORARY SECRET bias_monitor_lake_s3 ({', '.join(parts)})"
