"""Utilities shared across pyframe."""
