"""The target process and its host, read from /proc and /sys only (no ptrace)."""
