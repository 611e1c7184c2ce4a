"""What readers of the store get: typed read models and the reading protocol.

The shapes (``models``), what "the same measurement configuration" means
(``configuration``) and the protocol a reader is handed (``reader.RunReader``) live below
the store, so the rooms that only read (the report, the quality gate) depend on these and
never import ``monitor.store``; the store's ``StoreView`` satisfies the protocol.
"""
