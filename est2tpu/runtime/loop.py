"""Explicit train/evaluate loop (placeholder)."""
