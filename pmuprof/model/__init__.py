"""Pure data model: folded stacks, counters and facts, built from a run directory or perf output."""
