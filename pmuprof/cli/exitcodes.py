"""The exit codes of every command, one table for `pmuprof --help`, the man page and docs/usage.md."""

from __future__ import annotations

import signal

from ..errors import PmuprofError
from ..workflows.doctor import EXIT_MISS
from ..workflows.schedule import EXIT_CRITICAL, EXIT_WARNING


def _error_classes() -> list[type[PmuprofError]]:
    out, todo = [], [PmuprofError]
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo.extend(cls.__subclasses__())
    return out


def exit_codes() -> list[tuple[int, str]]:
    """(code, meaning), ascending; errors from their classes' docstrings, so a new error type shows up."""
    codes: dict[int, str] = {0: "success", 1: "an unexpected error (its message says which)"}
    for cls in _error_classes():
        if cls is not PmuprofError and cls.__doc__:
            codes.setdefault(cls.exit_code, cls.__doc__.strip().splitlines()[0].rstrip("."))
    codes[EXIT_MISS] = "doctor --strict[=SEVERITY]: a check of that severity or worse is MISS"
    codes[EXIT_WARNING] = (
        "capture --exit-code-on-findings: the worst finding is a warning; history --fail-on-regression"
    )
    codes[EXIT_CRITICAL] = "capture --exit-code-on-findings: a critical finding"
    for sig, name in ((signal.SIGHUP, "SIGHUP"), (signal.SIGINT, "Ctrl-C (SIGINT)"), (signal.SIGTERM, "SIGTERM")):
        codes[128 + sig] = f"stopped by {name}: what was captured so far has been kept"  # 129, 130, 143
    return sorted(codes.items())


def epilog() -> str:
    """The exit-code block of `pmuprof --help` (click keeps \\b paragraphs as written)."""
    return "\b\nExit codes:\n" + "\n".join(f"  {code:<4} {text}" for code, text in exit_codes())
