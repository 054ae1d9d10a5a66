"""Worked example families of the SDK."""
