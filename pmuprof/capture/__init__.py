"""Capture: the only package that starts processes (perf, the native helper, SQL to mysqld)."""
