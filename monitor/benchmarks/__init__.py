"""Benchmarks room: reading, validating and normalising benchmark files into items.

Knows nothing about models.
"""
