"""Compatibility knowledge, read from the TOML files in matrices/ (data, never Python tables)."""
