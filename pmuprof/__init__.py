"""pmuprof: profile mysqld/mariadbd with perf and PMU counters, and name the hotspot."""

__version__ = "0.1.0"
