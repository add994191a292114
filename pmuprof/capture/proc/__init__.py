"""What a capture reads of this host from /proc and /sys (never ptrace): the target processes and their
threads, the host and its load, the kernel's symbols, and the binaries the targets map (kept for a report
elsewhere)."""
