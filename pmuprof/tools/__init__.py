"""Programs pmuprof drives for any stage, never touching the target: perf readers, native clients, ELF."""
