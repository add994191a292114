"""stdout and stderr that outlive their reader: `capture … 2>&1 | head -1` still writes the report.

Python ignores SIGPIPE, so the first write after the reader has gone raises BrokenPipeError, in the middle
of a capture. Wrapped here, that stream is pointed at /dev/null instead and the command goes on to the
end: the run directory and the report are written and the exit status is the command's own.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, TextIO


class ReaderGone:
    """A text stream whose writes stop (into /dev/null) when the pipe's reader has closed it."""

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
        if err.errno != errno.EPIPE:
            raise err
        self.gone = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())  # what is still buffered is flushed into /dev/null
        finally:
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:  # encoding, errors, fileno, isatty, buffer: the stream's own
        return getattr(self._stream, name)


def guard() -> None:
    """Wrap sys.stdout and sys.stderr (once) for the rest of this process."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, ReaderGone):
            setattr(sys, name, ReaderGone(stream))
