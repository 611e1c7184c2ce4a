"""Importers: other people's published per-item results, written as runs in our store."""
