"""Drift: paired tests between runs, noise floor, multiple-comparison control, provenance diff."""
