"""Store room: DuckDB schema, migrations, writes, queries, Parquet export and shard merge.

Computes no metrics: it stores what scoring produced and answers questions about it.
"""
