"""Record side: the only code that starts perf against the target, reads its /proc and queries the server."""
