"""Clients of pmuprof's native executables: pmuprof-helper (JSON) and pmuprof-fold (folded stacks)."""
