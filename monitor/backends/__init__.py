"""Backends room: turn (model, texts) into numbers. Knows nothing about stereotypes."""
