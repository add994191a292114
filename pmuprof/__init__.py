"""pmuprof: profile mysqld/mariadbd with perf and PMU counters, and name the hotspot."""

import os

__version__ = "0.1.0"

# Before any module imports numpy: OpenBLAS would start one idle thread per CPU (63 on a 64-CPU
# database host) for linear algebra pmuprof never does.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
