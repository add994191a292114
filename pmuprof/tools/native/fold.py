"""Fold perf script text with the C folder (pmuprof-fold) when built, else with the Python Folder."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import IO, cast
from collections.abc import Iterable

from .. import proc as proc_tools
from ...errors import InputError, PerfError, PmuprofError
from ...model.perfscript import Folder, FoldResult
from ...model.stacks import Stacks
from ...packages import apt_install
from ...paths import fold_path
from .stacksbin import read_fold_bin

STACKS_BIN = "stacks.bin"

Source = IO[bytes] | IO[str] | Iterable[str | bytes]
_CHUNK = 1 << 20
SCRIPT_MAX_S = 4 * 3600  # perf script of the largest perf.data we expect (dwarf, tens of GB)


class FoldError(PmuprofError):
    """pmuprof-fold itself failed (not the input)."""


def fold_argv(
    binary: Path,
    meta: Path,
    pids: Iterable[int] = (),
    comms: Iterable[str] = (),
    per_thread: bool = False,
    names: dict[int, str] | None = None,
    raw_unknown: bool = False,
    stacks_bin: Path | None = None,
) -> list[str]:
    """pmuprof-fold's command line (pure); with ``stacks_bin`` the stacks go there as arrays, not to stdout."""
    argv = [str(binary), "--meta", str(meta)] + (["--stacks-bin", str(stacks_bin)] if stacks_bin else [])
    for pid in pids:
        argv += ["--pid", str(int(pid))]
    for comm in comms:
        argv += ["--comm", comm]
    for pid, name in (names or {}).items():
        argv += ["--name", f"{int(pid)}={name}"]
    return argv + (["--per-thread"] if per_thread else []) + (["--raw-unknown"] if raw_unknown else [])


@functools.lru_cache(maxsize=1)
def _say_fallback() -> None:
    sys.stderr.write(
        "pmuprof: pmuprof-fold is not built (make -C native): folding perf script text in "
        "Python, several times slower than perf script\n"
    )


def fold_stream(
    source: Source,
    pids: Iterable[int] = (),
    comms: Iterable[str] = (),
    per_thread: bool = False,
    names: dict[int, str] | None = None,
    raw_unknown: bool = False,
) -> FoldResult:
    """Fold perf script text from a file object (binary or text) or an iterable of lines.

    A last line without a newline means the text was cut: that sample is dropped and flagged.
    """
    binary = fold_path()
    if binary is None:
        _say_fallback()
        return _fold_python(_byte_lines(source), pids, comms, per_thread, names, raw_unknown)
    with tempfile.TemporaryDirectory(prefix="pmuprof-fold-") as tmp:
        meta = Path(tmp) / "meta.json"
        argv = fold_argv(binary, meta, pids, comms, per_thread, names, raw_unknown, Path(tmp) / STACKS_BIN)
        fd = _direct_fd(source)
        with open(Path(tmp) / "stacks.folded", "w+b") as out, open(Path(tmp) / "err", "w+b") as err:
            proc = subprocess.Popen(argv, stdin=subprocess.PIPE if fd is None else fd, stdout=out, stderr=err)
            try:
                with proc_tools.Watchdog((proc,), proc_tools.stall_s(), SCRIPT_MAX_S) as dog:
                    if fd is None:
                        _pump(source, proc)
                    proc.wait()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            if dog.fired:
                raise FoldError(
                    f"pmuprof-fold {dog.fired}: stopped",
                    "rebuild it (make -C native), or set PMUPROF_FOLD= to fold in Python",
                )
            return _result(proc.returncode, out, err, meta)


def fold_file(
    path: Path | str,
    pids: Iterable[int] = (),
    comms: Iterable[str] = (),
    per_thread: bool = False,
    names: dict[int, str] | None = None,
    raw_unknown: bool = False,
) -> FoldResult:
    """Fold a perf script text file; pmuprof-fold reads it directly (no Python in the hot path)."""
    with open(path, "rb") as fh:
        return fold_stream(fh, pids, comms, per_thread, names, raw_unknown)


def fold_perf_script_process(
    argv: list[str],
    pids: Iterable[int] = (),
    comms: Iterable[str] = (),
    per_thread: bool = False,
    names: dict[int, str] | None = None,
    raw_unknown: bool = False,
) -> FoldResult:
    """Run ``argv`` (a perf script command line) with its stdout piped straight into pmuprof-fold.

    Raises InputError when perf script fails before any sample was kept (its stderr says why).
    """
    binary = fold_path()
    with (
        tempfile.TemporaryDirectory(prefix="pmuprof-fold-") as tmp,
        open(Path(tmp) / "perf.err", "w+b") as perf_err,
        open(Path(tmp) / "stacks.folded", "w+b") as out,
        open(Path(tmp) / "fold.err", "w+b") as err,
    ):
        perf = _start(argv, stdout=subprocess.PIPE, stderr=perf_err, stdin=subprocess.DEVNULL)
        assert perf.stdout is not None  # stdout=PIPE
        fold = None
        try:
            if binary is None:
                _say_fallback()
                with proc_tools.Watchdog((perf,), proc_tools.stall_s(), SCRIPT_MAX_S) as dog:
                    res = _fold_python(perf.stdout, pids, comms, per_thread, names, raw_unknown)
                    perf.wait()
            else:
                meta = Path(tmp) / "meta.json"
                fold = subprocess.Popen(
                    fold_argv(binary, meta, pids, comms, per_thread, names, raw_unknown, Path(tmp) / STACKS_BIN),
                    stdin=perf.stdout,
                    stdout=out,
                    stderr=err,
                )
                perf.stdout.close()  # pmuprof-fold holds the only reader now
                with proc_tools.Watchdog((perf, fold), proc_tools.stall_s(), SCRIPT_MAX_S) as dog:
                    fold.wait()
                    perf.wait()
                if not dog.fired:
                    res = _result(fold.returncode, out, err, meta)
        finally:
            for proc in (perf, fold):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait()
        if dog.fired:
            raise PerfError(
                f"{argv[0]} script {dog.fired}: stopped",
                "check the perf binary (PMUPROF_PERF) and the perf.data; `pmuprof doctor` tests perf",
            )
        if perf.returncode != 0 and res.kept == 0:
            perf_err.seek(0)
            raise InputError(
                f"perf script failed: {_first_line(perf_err.read())}",
                "the perf.data is corrupt or truncated; re-record, or pass its perf script text",
            )
        return res


def _start(argv: list[str], **kw) -> subprocess.Popen:
    try:
        return subprocess.Popen(argv, **kw)
    except FileNotFoundError as err:
        raise InputError(
            f"cannot run {argv[0]}: not found", f"{apt_install('perf')}, or give report a folded / perf script file"
        ) from err


def _direct_fd(source: Source) -> int | None:
    """The file descriptor of a binary, seekable file object, positioned where Python's reader is."""
    if not (hasattr(source, "fileno") and hasattr(source, "read") and hasattr(source, "seekable")):
        return None
    try:
        if "b" not in getattr(source, "mode", "b") or not source.seekable():
            return None
        stream = cast(IO[bytes], source)  # a binary file object, as checked above
        stream.seek(stream.tell())  # drop Python's read-ahead buffer: the fd starts at the logical position
        return stream.fileno()
    except (OSError, ValueError):
        return None


def _byte_chunks(source: Source) -> Iterable[bytes]:
    read = getattr(source, "read", None)
    if read is not None:
        while chunk := read(_CHUNK):
            yield chunk if isinstance(chunk, bytes) else chunk.encode("utf-8", "surrogateescape")
        return
    batch: list[bytes] = []
    size = 0
    for line in source:
        raw = line if isinstance(line, bytes) else line.encode("utf-8", "surrogateescape")
        batch.append(raw)
        size += len(raw)
        if size >= _CHUNK:
            yield b"".join(batch)
            batch, size = [], 0
    if batch:
        yield b"".join(batch)


def _byte_lines(source: Source) -> Iterable[bytes]:
    rest = b""
    for chunk in _byte_chunks(source):
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            yield line + b"\n"
    if rest:
        yield rest


def _pump(source: Source, proc: subprocess.Popen) -> None:
    assert proc.stdin is not None
    try:
        for chunk in _byte_chunks(source):
            proc.stdin.write(chunk)
        proc.stdin.close()
    except BrokenPipeError:
        pass  # pmuprof-fold stopped early: its exit status and stderr say why
    proc.wait()


def _fold_python(lines: Iterable[bytes], pids, comms, per_thread, names, raw_unknown=False) -> FoldResult:
    folder = Folder(pids, comms, per_thread, names, raw_unknown)
    last = b""
    for raw in lines:
        folder.feed(raw.decode("utf-8", "backslashreplace"))
        last = raw
    return folder.finish(truncated=bool(last) and not last.endswith(b"\n"))


def _first_line(raw: bytes) -> str:
    text = raw.decode("utf-8", "backslashreplace")
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "no message")[:300]


def _result(returncode: int | None, out: IO[bytes], err: IO[bytes], meta_path: Path) -> FoldResult:
    """FoldResult from pmuprof-fold's stdout (folded stacks) and its meta JSON."""
    if returncode != 0:
        err.seek(0)
        raise FoldError(
            f"pmuprof-fold failed ({returncode}): {_first_line(err.read())}",
            "rebuild it (make -C native), or set PMUPROF_FOLD= to fold in Python",
        )
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    binary = meta_path.parent / STACKS_BIN
    samples = None
    if binary.is_file():
        stacks, samples = read_fold_bin(binary)
    else:  # the folded text on stdout
        out.seek(0)
        text: Counter = Counter()
        for line in out.read().decode("utf-8").split("\n"):
            if line:
                frames, _, count = line.rpartition(" ")
                text[tuple(frames.split(";"))] = int(count)
        stacks = Stacks.of(text)
    return FoldResult(
        stacks=stacks,
        leaves=Counter({(d, s, int(o, 16)): c for c, d, s, o in meta["leaves"]}),
        names={int(p): n for p, n in meta["names"].items()},
        left_out={int(p): (n, c) for p, (n, c) in meta.get("left_out", {}).items()},
        events=Counter(meta["events"]),
        kept=meta["kept"],
        filtered=meta["filtered"],
        bad_lines=meta["bad_lines"],
        truncated=meta["truncated"],
        pid_known=meta["pid_known"],
        samples=samples,
    )


def native_folder() -> Path | None:
    """The pmuprof-fold binary in use, or None (Python fallback)."""
    return fold_path()
