"""Typed errors: each carries an exit code and a one-line fix, printed once by the CLI."""

from __future__ import annotations


class PmuprofError(Exception):
    """An error the user can act on. ``str()`` is the one line the CLI prints."""

    exit_code = 1

    def __init__(self, message: str, fix: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message} — {self.fix}" if self.fix else self.message


class UsageError(PmuprofError):
    """Bad arguments or an input that cannot be used."""

    exit_code = 2


class InputError(PmuprofError):
    """An input file or directory that is missing, corrupt, truncated or empty."""

    exit_code = 3


class TargetError(PmuprofError):
    """The target process is missing, vanished, or not a process we may profile."""

    exit_code = 4


class PerfError(PmuprofError):
    """perf is missing, forbidden, or failed."""

    exit_code = 5


class ResourceError(PmuprofError):
    """Not enough disk, or another host resource the capture needs."""

    exit_code = 6


class RuleError(PmuprofError):
    """A rule file is invalid (unknown key, bad matcher); message names file:line."""

    exit_code = 7


class HelperError(PmuprofError):
    """The native helper is missing or failed; the feature it backs is off."""

    exit_code = 8


class FactsError(PmuprofError):
    """The server facts asked for were not collected (unreachable, refused, a wrong password): the report has the stacks only."""

    exit_code = 11


class Interrupted(PmuprofError):
    """Ctrl-C, SIGTERM or SIGHUP: what was captured so far has been kept (exit 128 + the signal number)."""

    exit_code = 130

    def __init__(self, message: str, fix: str = "", exit_code: int = 130) -> None:
        super().__init__(message, fix)
        self.exit_code = exit_code
