"""Versioned DuckDB schema. Each migration is applied once, in order, in a transaction.

Never edit a released migration: add a new one. ``schema_migrations`` records which
versions a database file has, so an old file is upgraded in place on open.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

from monitor.store import details

# A migration is DDL text, or a function for one that must read the store first (7 moves
# data whose columns depend on which families are installed).
Migration = str | Callable[[duckdb.DuckDBPyConnection], None]

MIGRATIONS: list[tuple[int, str, Migration]] = [
    (
        1,
        "runs, items, scores, exclusions, axis measures, validations",
        f"""
        CREATE TABLE runs (
            run_id            VARCHAR PRIMARY KEY,
            snapshot_id       VARCHAR NOT NULL,
            snapshot_kind     VARCHAR NOT NULL,
            snapshot_revision VARCHAR NOT NULL,
            snapshot_manifest JSON NOT NULL,
            metric            VARCHAR NOT NULL,
            metric_version    VARCHAR NOT NULL,
            benchmarks        VARCHAR[] NOT NULL,
            dataset_versions  JSON NOT NULL,
            fingerprint       VARCHAR NOT NULL,
            trigger           VARCHAR NOT NULL,
            origin            VARCHAR NOT NULL DEFAULT 'local',
            status            VARCHAR NOT NULL,
            started_at        TIMESTAMPTZ NOT NULL,
            finished_at       TIMESTAMPTZ,
            seed              INTEGER NOT NULL DEFAULT 0,
            repeat_group      VARCHAR,
            repeat_index      INTEGER NOT NULL DEFAULT 0,
            git_commit        VARCHAR,
            monitor_version   VARCHAR,
            device            VARCHAR,
            dtype             VARCHAR,
            batch_size        INTEGER,
            environment       JSON NOT NULL,
            n_scored          INTEGER,
            n_excluded        INTEGER,
            notes             VARCHAR
        );
        CREATE TABLE items (
{details.ITEM_IDENTITY_COLUMNS}
            direction         VARCHAR NOT NULL,
            text_stereo       VARCHAR NOT NULL,
            text_anti         VARCHAR NOT NULL,
            targets_stereo    VARCHAR[] NOT NULL,
            targets_anti      VARCHAR[] NOT NULL,
            template          VARCHAR,
            raw_stereo_cell   VARCHAR,
            raw_anti_cell     VARCHAR,
            errata            VARCHAR[] NOT NULL
        );
        CREATE TABLE scores (
            run_id          VARCHAR NOT NULL,
            item_id         VARCHAR NOT NULL,
            metric          VARCHAR NOT NULL,
            metric_version  VARCHAR NOT NULL,
            outcome         VARCHAR NOT NULL,
            delta           DOUBLE,
            score_stereo    DOUBLE,
            score_anti      DOUBLE,
            lp_stereo       DOUBLE,
            lp_anti         DOUBLE,
            prior_stereo    DOUBLE,
            prior_anti      DOUBLE,
            prob_stereo     DOUBLE,
            prob_anti       DOUBLE,
            n_tokens_stereo INTEGER,
            n_tokens_anti   INTEGER,
            details         JSON,
            scored_at       TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (run_id, item_id)
        );
        CREATE TABLE exclusions (
            run_id            VARCHAR NOT NULL,
            benchmark         VARCHAR NOT NULL,
            benchmark_version VARCHAR NOT NULL,
            source_row        INTEGER NOT NULL,
            reason            VARCHAR NOT NULL,
            detail            VARCHAR NOT NULL,
            PRIMARY KEY (run_id, benchmark, source_row)
        );
        CREATE TABLE axis_measures (
            run_id     VARCHAR NOT NULL,
            benchmark  VARCHAR NOT NULL,
            axis       VARCHAR NOT NULL,
            measure    VARCHAR NOT NULL,
            k          INTEGER NOT NULL,
            n          INTEGER NOT NULL,
            value      DOUBLE,
            ci_low     DOUBLE,
            ci_high    DOUBLE,
            definition VARCHAR NOT NULL,
            PRIMARY KEY (run_id, benchmark, axis, measure)
        );
        CREATE TABLE validations (
            run_id       VARCHAR NOT NULL,
            suite        VARCHAR NOT NULL,
            success      BOOLEAN NOT NULL,
            results      JSON NOT NULL,
            validated_at TIMESTAMPTZ NOT NULL
        );
        """,
    ),
    (
        2,
        "api requests and batches (openai-chat / openai-responses runs)",
        """
        CREATE TABLE api_requests (
            run_id             VARCHAR NOT NULL,
            request_key        VARCHAR NOT NULL,  -- item id / presentation order / sample
            item_id            VARCHAR NOT NULL,
            option_order       VARCHAR NOT NULL,  -- stereo-first | anti-first
            sample_index       INTEGER NOT NULL,
            prompt_template_id VARCHAR NOT NULL,
            prompt             VARCHAR NOT NULL,  -- exactly what was sent
            options            JSON NOT NULL,     -- [{side, text}] in presentation order
            endpoint           VARCHAR NOT NULL,  -- chat.completions | responses
            request_params     JSON NOT NULL,     -- temperature, top_logprobs, max tokens, seed
            status             VARCHAR NOT NULL,  -- ok | failed | model_changed
            response_text      VARCHAR,
            top_logprobs       JSON,              -- [[token, logprob, [[alt, logprob], ...]], ...]
            response           JSON,              -- raw subset: id, model, usage, finish reason
            reported_model     VARCHAR,
            system_fingerprint VARCHAR,
            input_tokens       INTEGER,
            output_tokens      INTEGER,
            latency_s          DOUBLE,
            attempts           INTEGER NOT NULL,
            retries            JSON,              -- why each retry was made (redacted)
            error              VARCHAR,
            batch_id           VARCHAR,
            created_at         TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (run_id, request_key)
        );
        CREATE TABLE api_batches (
            batch_id        VARCHAR PRIMARY KEY,
            run_id          VARCHAR NOT NULL,
            endpoint        VARCHAR NOT NULL,
            input_file_id   VARCHAR NOT NULL,
            request_keys    VARCHAR[] NOT NULL,
            status          VARCHAR NOT NULL,  -- submitted, ingested, failed, expired...
            output_file_id  VARCHAR,
            error_file_id   VARCHAR,
            detail          VARCHAR,
            submitted_at    TIMESTAMPTZ NOT NULL,
            updated_at      TIMESTAMPTZ NOT NULL
        );
        """,
    ),
    (
        3,
        "results beyond sentence pairs: item kinds and payloads, measure kinds with p and method",
        """
        -- An item is a stereo/anti pair (kind 'pair') or something else (kind 'word-set',
        -- 'identity-pair', ...) whose content lives in payload; pair columns become optional.
        ALTER TABLE items ADD COLUMN kind VARCHAR DEFAULT 'pair';
        ALTER TABLE items ADD COLUMN payload JSON;
        ALTER TABLE items ALTER COLUMN text_stereo DROP NOT NULL;
        ALTER TABLE items ALTER COLUMN text_anti DROP NOT NULL;
        ALTER TABLE items ALTER COLUMN targets_stereo DROP NOT NULL;
        ALTER TABLE items ALTER COLUMN targets_anti DROP NOT NULL;
        ALTER TABLE items ALTER COLUMN direction DROP NOT NULL;
        -- A per-item score of a non-pair result has no stereo/anti outcome.
        ALTER TABLE scores ALTER COLUMN outcome DROP NOT NULL;
        -- A measure is a rate (k/n, Wilson), an effect size (p, bootstrap interval) or a
        -- ranking score; the interval's method and confidence level are recorded with it.
        ALTER TABLE axis_measures ADD COLUMN kind VARCHAR DEFAULT 'rate';
        ALTER TABLE axis_measures ADD COLUMN p_value DOUBLE;
        ALTER TABLE axis_measures ADD COLUMN method VARCHAR DEFAULT 'wilson';
        ALTER TABLE axis_measures ADD COLUMN confidence DOUBLE DEFAULT 0.95;
        ALTER TABLE axis_measures ADD COLUMN details JSON;
        ALTER TABLE axis_measures ALTER COLUMN k DROP NOT NULL;
        ALTER TABLE axis_measures ALTER COLUMN n DROP NOT NULL;
        """,
    ),
    (
        4,
        "run leases: which process owns a run in progress, with a heartbeat",
        """
        -- A run being scored is owned by one process. Another process resumes it only
        -- once the owner is gone (its pid is dead on this host, or its heartbeat is
        -- stale), so two writers never score into one run. Not exported: a lease
        -- means nothing on another machine.
        CREATE TABLE run_leases (
            run_id       VARCHAR PRIMARY KEY,
            owner        VARCHAR NOT NULL,  -- random token of the owning process
            host         VARCHAR NOT NULL,
            pid          INTEGER NOT NULL,
            acquired_at  TIMESTAMPTZ NOT NULL,
            heartbeat_at TIMESTAMPTZ NOT NULL
        );
        """,
    ),
    (
        5,
        "embeddings of what an association test embedded, so a rerun can be checked",
        """
        -- One vector per scored term of a run (word-set items): what the model returned,
        -- as float32, so a rerun's vectors can be compared and the statistics recomputed.
        CREATE TABLE embeddings (
            run_id  VARCHAR NOT NULL,
            item_id VARCHAR NOT NULL,
            dim     INTEGER NOT NULL,
            vector  FLOAT[] NOT NULL,
            PRIMARY KEY (run_id, item_id)
        );
        """,
    ),
    (
        6,
        "run origins: a scheduled run was written by the nightly, on the default branch",
        """
        -- Each run records where it was written in environment.ci.origin (nightly,
        -- default-branch, pull-request, branch; none: local), and a pull request's check
        -- reuses only nightly and default-branch runs (monitor.jobs.reuse). Runs stored
        -- before that recorded only their trigger; GitHub runs a schedule on the default
        -- branch alone, so those are the nightly's. No column: the origin sits with the
        -- CI facts it is read from, and exports and merges carry it unchanged.
        UPDATE runs
        SET environment = json_merge_patch(environment, '{"ci": {"origin": "nightly"}}')
        WHERE trigger = 'schedule' AND json_extract_string(environment, '$.ci.origin') IS NULL;
        """,
    ),
    (
        7,
        "generic core records: family columns move to the families' detail tables",
        # items keep identity, kind, payload, template (the cluster key drift and the
        # choice questions share) and errata; scores keep outcome, delta and details.
        # The pair columns move to pair_items / pair_scores, which the pair family
        # declares (monitor.contract.detail); see details.move_to_detail_tables.
        details.move_to_detail_tables,
    ),
]

SCHEMA_VERSION = MIGRATIONS[-1][0]
