"""stdout and stderr that outlive their reader: `capture … 2>&1 | head -1` still writes the report.

Python ignores SIGPIPE, so the first write after the reader has gone raises BrokenPipeError, in the middle
of a capture. Wrapped here, that stream is pointed at /dev/null instead and the command goes on to the
end: the run directory and the report are written and the exit status is the command's own. A stream closed
before the start (`2>&-`) gets /dev/null in its place: Python leaves sys.stderr None then, and the first file
pmuprof opened would take fd 2, which perf and the helpers inherit as their stderr.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, TextIO


class ReaderGone:
    """A text stream whose writes stop (into /dev/null) when the pipe's reader has closed it, or when its
    descriptor cannot be written at all."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as err:
            self._drop(err)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as err:
            self._drop(err)

    def _drop(self, err: OSError) -> None:
        if err.errno not in (errno.EPIPE, errno.EBADF):  # EBADF: a descriptor open for reading only (`2</dev/null`)
            raise err
        self.gone = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())  # what is still buffered is flushed into /dev/null
        finally:
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:  # encoding, errors, fileno, isatty, buffer: the stream's own
        return getattr(self._stream, name)


def reopen_closed() -> None:
    """/dev/null on each of fds 0-2 the caller closed, and a text stream on it where Python left sys.* None."""
    for fd, name in enumerate(("stdin", "stdout", "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        if getattr(sys, name) is None:
            mode, buffering = ("r", -1) if fd == 0 else ("w", -1 if fd == 1 else 1)  # stderr: line-buffered
            setattr(sys, name, open(fd, mode, buffering=buffering, errors="backslashreplace", closefd=False))


def guard() -> None:
    """Closed fds 0-2 reopened on /dev/null; sys.stdout and sys.stderr wrapped (once) for the rest of this
    process."""
    reopen_closed()
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, ReaderGone):
            setattr(sys, name, ReaderGone(stream))
