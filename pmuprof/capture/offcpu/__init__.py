"""Off-CPU capture: the BPF tracer run beside perf, its stacks named and folded, thread snapshots."""
