"""Released migrations run the same SQL, byte for byte, whatever the code that builds it.

"Never edit a released migration" (``store/schema.py``) is a promise about the SQL a store
runs when it upgrades, not about how the Python spells it: shared pieces (the items
table's identity columns, written once for migrations 1 and 7) may be factored out as long
as the text each migration executes stays what was released. The digests below are the
SHA-256 of that text as released; a change to any of them changes what an old store runs
on upgrade and is a new migration's job, not an edit.
"""

from __future__ import annotations

import hashlib

from monitor.store import details, schema

# schema version -> SHA-256 of its DDL text (migration 7 reads the store first: its DDL is
# ``details._CORE_DDL_7``, pinned below).
RELEASED_DDL = {
    1: "55b6a7f7fab7e704261b80493b7993d7267676de4513d207313b5a4f2700f528",
    2: "3074a509a115176f9bd6d0655f71a1d04f0791e0070bdb405cd0232be55b30b7",
    3: "f291c29e892e9e09e6cf1343d6549891cdd6da774c8a4329a56407d061d71e4d",
    4: "3c4535e941e49f218b5820e9d516b7738ff91b6edee788a2fbbc7d6c64833ea8",
    5: "f3512ab702c45503bee4502b4904e86b2dc8e54f9e9de31014a673eba2be4307",
    6: "d94be758e3894c4b184cd54912d19df6be06cab994504f8b60d351031c73dcfb",
}
RELEASED_CORE_DDL_7 = {
    "items": "36d57c8cc4d101ba36090d0e5653c924881d6de953f29838d8c1db1ba777bd96",
    "scores": "426ea4c20281ab3e1ac58f203f205b24250a2dba8404482c6bde0f1676083215",
}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_released_migrations_run_the_released_sql():
    text = {v: m for v, _name, m in schema.MIGRATIONS if isinstance(m, str)}
    assert {v: _digest(m) for v, m in text.items() if v in RELEASED_DDL} == RELEASED_DDL


def test_schema_7_rebuilds_the_core_tables_with_the_released_sql():
    assert {k: _digest(v) for k, v in details._CORE_DDL_7.items()} == RELEASED_CORE_DDL_7


def test_the_items_identity_columns_are_one_text_in_both_migrations():
    """Migration 1's items table and schema 7's rebuilt one share the identity columns:
    the same text in both, so the two cannot drift apart by an edit to one."""
    columns = details.ITEM_IDENTITY_COLUMNS
    assert "item_id           VARCHAR PRIMARY KEY" in columns
    assert columns in schema.MIGRATIONS[0][2]
    assert columns in details._CORE_DDL_7["items"]
