"""Issue 34, a received run directory is read-only evidence: read only from a directory no other user can
change, each file only when it is a regular file of the reader or root (never through a link), a perf.data
perf could not close repaired on a copy, and binaries.tar.gz unpacked within bounds into a private directory.
Each reader of the run directory meets a link and a file of another local user (nobody)."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import struct
import tarfile
import tempfile
import threading
import time
from pathlib import Path

import pytest

from pmuprof.analysis import archive
from pmuprof.analysis.load import REPAIRED_NOTE
from pmuprof.capture.offcpu import tracer

from .conftest import finish, one_line, running_busy, spawn_cli
from .localuser import NOBODY, Victim, foreign_file, foreign_link, need_root

MARK = "SECRET_MARKER_OF_ANOTHER_FILE"
FOLDED = f"main;{MARK} 100000\n"
JSON = json.dumps({"pmuprof_version": "9", "command": [MARK], "reachable": True, "error": MARK}) + "\n"
PROCESSLIST = "# pmuprof processlist: second\ttid\tid\tuser\tdb\tcommand\tstate\ttime\tdigest\n"


def _perf_data_victim() -> bytes:
    """What a root-only file beginning PERFILE2 looks like to the repair: a header whose data size is 0."""
    head = bytearray(b"PERFILE2" + bytes(200))
    struct.pack_into("<QQ", head, 40, 104, 0)
    return bytes(head) + bytes(64)


# each file a report reads: what a victim of that kind holds, and whether the report must re-read perf.data
# (the file is read only then: a capture cut short has no stacks.folded)
READERS = {
    "run.json": (JSON, False),
    "stacks.folded": (FOLDED, False),
    "counters.json": (JSON, False),
    "mysql.json": (JSON, False),
    "analysis.json": (JSON, False),
    "threads.json": (JSON, False),
    "leaves.tsv": (f"100\t/bin/x\t{MARK}\t10\n", False),
    "samples.tsv": (f"# {MARK}\n", False),
    "processlist.tsv": (PROCESSLIST + f"1\t2\t3\troot\tdb\tQuery\tx\t1\tSELECT {MARK}\n", False),
    "offcpu.folded": (f"# unit: us\nmain;{MARK};off-cpu:S 1000\n", False),
    "offcpu.out": (f"pmuprof-offcpu\t4\n{MARK}\n", False),
    "perf.data": (_perf_data_victim(), True),
    "kallsyms.gz": (gzip.compress(f"ffffffff81000000 T {MARK}\n".encode()), True),
    "binaries.tar.gz": (b"", True),
    "recovered-callers.tsv": (f"# {MARK}\n", True),
}


@pytest.fixture(scope="module")
def template(duty_exe, tmp_path_factory):
    """A real run directory of the busy process (off-CPU too where the tracer runs), with a mysql.json and a
    processlist.tsv as a server would have left. The busy process runs for the capture only: the tests read
    the copies."""
    need_root()
    run = tmp_path_factory.mktemp("template") / "run"
    with running_busy(duty_exe) as busy:
        off = ("--off-cpu",) if not tracer.unavailable([busy.pid])[0] else ("--no-off-cpu",)
        res = finish(spawn_cli("capture", "-p", busy.pid, "-d", "2", "-o", run, "--no-mysql", *off), timeout=300)
    assert res.code == 0, res.err
    (run / "mysql.json").write_text(json.dumps({"reachable": False, "error": "no server in this test"}))
    (run / "processlist.tsv").write_text(PROCESSLIST)
    for name in ("report.html", "report.md", "findings.json", "flame.svg"):
        (run / name).unlink(missing_ok=True)
    return run


def _copy(template: Path, where: Path, refold: bool = False) -> Path:
    run = where / "received"
    shutil.copytree(template, run, symlinks=True)
    run.chmod(0o700)
    if refold:
        (run / "stacks.folded").unlink()
    return run


def _victim_content(name: str, content) -> bytes:
    if name == "binaries.tar.gz":
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            data = MARK.encode()
            info = tarfile.TarInfo("member")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        return buf.getvalue()
    return content if isinstance(content, bytes) else content.encode()


def _outputs(out: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in out.iterdir() if p.is_file())


@pytest.mark.parametrize("kind", ["a link by nobody", "a file of nobody"])
@pytest.mark.parametrize("name", list(READERS))
def test_each_reader_leaves_out_what_another_user_planted(pmuprof, template, tmp_path, name, kind):
    content, refold = READERS[name]
    if name == "threads.json" and not (template / "offcpu.folded").is_file():  # read only beside off-CPU stacks
        pytest.skip(f"the template recorded no off-CPU stacks: {tracer.unavailable([os.getpid()])[0]}")
    run = _copy(template, tmp_path, refold or name == "offcpu.out")
    if name == "offcpu.out":
        (run / "offcpu.folded").unlink(missing_ok=True)  # offcpu.out is looked at only without it
    data = _victim_content(name, content)
    victim = Victim(tmp_path / "victim", data)
    if kind == "a link by nobody":
        foreign_link(run / name, victim.path)
        why = f"{name}: a symbolic link owned by uid {NOBODY}, not followed"
    else:
        foreign_file(run / name, data)
        why = f"{name}: owned by uid {NOBODY}, neither you nor root"
    out = tmp_path / "out"
    res = pmuprof("report", run, "-o", out)
    if name == "perf.data":  # nothing else to report: the run is refused in one line
        one_line(res, 3, why.split(": ", 1)[1], "no stacks.folded and no perf.data")
    else:
        assert res.code == 0, res.err
        warned = [line for line in res.err.splitlines() if line.startswith("pmuprof: warning:") and why in line]
        assert len(warned) == 1, res.err
        assert MARK not in _outputs(out)
    assert victim.unchanged()
    assert not any(p.name.endswith(".tmp") for p in out.glob("*")) if out.exists() else True


@pytest.mark.parametrize("layout", ["owned by nobody", "writable by all", "in a directory of nobody"])
def test_a_run_directory_another_user_can_change_is_refused(pmuprof, template, tmp_path, layout):
    base = Path(tempfile.mkdtemp(dir=tmp_path))
    run = _copy(template, base)
    if layout == "owned by nobody":
        os.chown(run, NOBODY, NOBODY)
        needle = f"{run} is owned by uid {NOBODY}"
    elif layout == "writable by all":
        run.chmod(0o777)
        needle = f"{run} is writable by group and others (mode 0777)"
    else:
        os.chown(base, NOBODY, NOBODY)
        needle = f"{base} is owned by uid {NOBODY}"
    for command in (("report", run, "-o", tmp_path / "out"), ("export", run, "-f", "folded", "-o", tmp_path / "x")):
        one_line(pmuprof(*command), 3, needle, "another user could change this run directory", "cp -r")
    assert not (run / "report.html").exists() and not (tmp_path / "x").exists()


def test_a_shared_run_directory_is_read(pmuprof, template, tmp_path):
    run = _copy(template, tmp_path)
    run.chmod(0o755)
    assert pmuprof("report", run, "-o", tmp_path / "out").code == 0
    assert "hot_leaf" in (tmp_path / "out" / "report.md").read_text()


def test_history_lists_a_run_another_user_can_change_and_reads_no_link(pmuprof, template, tmp_path):
    base = tmp_path / "runs"
    base.mkdir()
    theirs, linked = _copy(template, base), base / "linked"
    theirs.rename(base / "theirs")
    os.chown(base / "theirs", NOBODY, NOBODY)
    shutil.copytree(template, linked, symlinks=True)
    victim = Victim(tmp_path / "victim", FOLDED.encode())
    foreign_link(linked / "stacks.folded", victim.path)
    foreign_link(linked / "findings.json", victim.path)
    res = pmuprof("history", base, "-o", tmp_path / "index.html")
    assert res.code == 0 and "Traceback" not in res.err, res.err
    assert f"is owned by uid {NOBODY}" in res.err and "stacks.folded: a symbolic link" in res.err, res.err
    assert MARK not in (tmp_path / "index.html").read_text() and victim.unchanged()


def test_an_unfinished_perf_data_is_repaired_on_a_copy_never_in_place(pmuprof, template, tmp_path):
    """perf killed (or a full disk) leaves the data size at 0: the report reads a copy it repaired in its own
    output directory; the run directory's perf.data, read-only evidence here, keeps every byte."""
    run = _copy(template, tmp_path, refold=True)
    data = run / "perf.data"
    with open(data, "r+b") as fh:
        fh.seek(48)
        fh.write(struct.pack("<Q", 0))
    data.chmod(0o444)
    before = hashlib.sha256(data.read_bytes()).hexdigest()
    out = tmp_path / "out"
    res = pmuprof("report", run, "-o", out)
    assert res.code == 0, res.err
    assert hashlib.sha256(data.read_bytes()).hexdigest() == before and data.stat().st_mode & 0o777 == 0o444
    assert "hot_leaf" in (out / "report.md").read_text()
    assert REPAIRED_NOTE in json.loads((out / "findings.json").read_text())["profile"]["warnings"]
    assert sorted(p.name for p in out.iterdir()) == ["findings.json", "flame.svg", "report.html", "report.md"]


def _run_json_keeping(run: Path, build_id: str, file: str = "binaries.tar.gz") -> None:
    """run.json saying the capture kept a binary that is not installed here (so a report unpacks it)."""
    meta = json.loads((run / "run.json").read_text())
    meta["kept_binaries"] = {"file": file, "binaries": [{"path": "/opt/gone/pmuprof-busy", "build_id": build_id}]}
    (run / "run.json").write_text(json.dumps(meta))


def _archive(path: Path, members: list[tuple[str, int]], level: int = 9) -> None:
    """A tar.gz of members of zeros (name, bytes), streamed: nothing that big is ever in memory."""
    with tarfile.open(path, "w:gz", compresslevel=level) as tar:
        for name, size in members:
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, _Zeros(size))


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self.left)
        buffer[:n] = bytes(n)
        self.left -= n
        return n


class _PeakUse(threading.Thread):
    """The most a filesystem held above its use at the start, polled every 2 ms."""

    def __init__(self, where: Path) -> None:
        super().__init__(daemon=True)
        self.where, self.done, self.peak = where, threading.Event(), 0
        self.base = self._used()

    def _used(self) -> int:
        st = os.statvfs(self.where)
        return (st.f_blocks - st.f_bfree) * st.f_frsize

    def run(self) -> None:
        while not self.done.wait(0.002):
            self.peak = max(self.peak, self._used() - self.base)


BUILD_ID = "ab" * 20


@pytest.mark.parametrize("member", ["a kept binary", "a member passed over"])
def test_a_decompression_bomb_is_stopped_at_its_ratio(pmuprof, template, tmp_path, tmpfs, member):
    """100 MiB of zeros in a 100 KiB binaries.tar.gz, as the binary run.json names or as a member before it:
    unpacking stops past 20x the archive's size, so the temporary directory ($TMPDIR, often the database's
    filesystem) never holds more than a few MiB, and nothing inflates for long."""
    run = _copy(template, tmp_path, refold=True)
    _run_json_keeping(run, BUILD_ID)
    bomb = [(BUILD_ID, 100 << 20)] if member == "a kept binary" else [("padding", 100 << 20), (BUILD_ID, 10)]
    _archive(run / "binaries.tar.gz", bomb)
    size = (run / "binaries.tar.gz").stat().st_size
    scratch = tmpfs(64)
    peak = _PeakUse(scratch)
    peak.start()
    old = tempfile.tempdir
    tempfile.tempdir = str(scratch)
    try:
        res = pmuprof("report", run, "-o", tmp_path / "out")
    finally:
        tempfile.tempdir = old
        peak.done.set()
        peak.join()
    assert res.code == 0, res.err
    bound = archive.MAX_RATIO * size + archive.RATIO_SLACK
    assert "binaries.tar.gz: unpacking stopped, it inflates past" in res.err, res.err
    assert peak.peak <= bound + (1 << 20), (peak.peak, bound)
    assert list(scratch.iterdir()) == []  # the private symfs went away with the report


def test_an_archive_of_too_many_members_is_stopped(pmuprof, template, tmp_path):
    run = _copy(template, tmp_path, refold=True)
    _run_json_keeping(run, BUILD_ID)
    _archive(run / "binaries.tar.gz", [(f"m{i}", 1) for i in range(archive.MAX_MEMBERS + 500)])
    res = pmuprof("report", run, "-o", tmp_path / "out")
    assert res.code == 0, res.err
    assert f"binaries.tar.gz: unpacking stopped, it holds more than {archive.MAX_MEMBERS} members" in res.err


def test_an_archive_is_bounded_in_total_bytes(pmuprof, template, tmp_path, monkeypatch):
    """The total bound, shown at a small size: members of random bytes (ratio 1) past MAX_INFLATED."""
    run = _copy(template, tmp_path, refold=True)
    _run_json_keeping(run, BUILD_ID)
    with tarfile.open(run / "binaries.tar.gz", "w:gz", compresslevel=1) as tar:
        data = os.urandom(3 << 20)
        info = tarfile.TarInfo(BUILD_ID)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    monkeypatch.setattr(archive, "MAX_INFLATED", 2 << 20)
    res = pmuprof("report", run, "-o", tmp_path / "out")
    assert res.code == 0, res.err
    assert "binaries.tar.gz: unpacking stopped, it inflates past 2 MiB" in res.err, res.err


def test_run_json_cannot_name_another_file_as_the_archive(pmuprof, template, tmp_path):
    run = _copy(template, tmp_path, refold=True)
    elsewhere = tmp_path / "elsewhere.tar.gz"
    _archive(elsewhere, [(BUILD_ID, 10)])
    _run_json_keeping(run, BUILD_ID, file=str(elsewhere))
    started = time.monotonic()
    res = pmuprof("report", run, "-o", tmp_path / "out")
    assert res.code == 0, res.err
    assert f"run.json names {str(elsewhere)!r} where the capture keeps binaries.tar.gz: not read" in res.err
    assert time.monotonic() - started < 600


@pytest.mark.parametrize(
    ("command", "name"),
    [("diff", "stacks.folded"), ("diff", "run.json"), ("export", "run.json"), ("export", "perf.data")],
)
def test_export_and_diff_leave_out_what_another_user_planted(pmuprof, template, tmp_path, command, name):
    """The other readers of a run directory (report and history are above) read its files the same way: a link
    of nobody's is not followed, said in one warning line, and nothing of its target reaches the output or
    is changed (export reads a run directory's perf.data first, for its thread ids)."""
    content, _ = READERS[name]
    run = _copy(template, tmp_path)
    victim = Victim(tmp_path / "victim", _victim_content(name, content))
    foreign_link(run / name, victim.path)
    if command == "export":
        out = tmp_path / "out.folded"
        res = pmuprof("export", run, "-f", "folded", "-o", out)
        text = out.read_text() if out.exists() else ""
    else:
        out = tmp_path / "diff"
        res = pmuprof("diff", template, run, "-o", out)
        text = _outputs(out) if out.exists() else ""
    assert res.code == 0, res.err
    why = f"{name}: a symbolic link owned by uid {NOBODY}, not followed"
    warned = [line for line in res.err.splitlines() if line.startswith("pmuprof: warning:") and why in line]
    assert len(warned) == 1, res.err
    assert MARK not in text and victim.unchanged()
