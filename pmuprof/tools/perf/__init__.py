"""perf command lines (pure), parsers of its output, and readers of a perf.data (perf script, evlist, header)."""
