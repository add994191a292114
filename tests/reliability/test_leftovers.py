"""Issue 34's low items, each on real processes: a tracer killed by SIGKILL is named so; the room a killed
capture left is given back (by a report, retention or the next capture) only when it is provably pmuprof's
and stale; a world-writable option file is ignored with a warning, as the mysql client does; watch says once
that captures are skipped under its disk floor; history survives a damaged cpus_allowed."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from pmuprof.capture import diskroom
from pmuprof.capture.offcpu import tracer

from .conftest import Ran, finish, one_line, spawn_cli


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:  # a thread that ended meanwhile
            continue
    return out


def _tracer_of(pid: int) -> int | None:
    """The pmuprof-offcpu process a capture started (found from its parent, never by name)."""
    for child in _children(pid):
        try:
            if b"pmuprof-offcpu" in Path(f"/proc/{child}/cmdline").read_bytes():
                return child
        except OSError:  # a short-lived child (perf version, the helper) that ended meanwhile
            continue
    return None


def test_a_tracer_killed_by_sigkill_is_named_so(busy, tmp_path):
    if tracer.unavailable([busy.pid])[0]:
        pytest.skip(f"the off-CPU tracer does not run here: {tracer.unavailable([busy.pid])[0]}")
    out = tmp_path / "run"
    proc = spawn_cli("capture", "-p", busy.pid, "-d", "8", "-o", out, "--no-mysql", "--off-cpu")
    deadline, victim = time.monotonic() + 120, None
    while victim is None and time.monotonic() < deadline and proc.poll() is None:
        victim = _tracer_of(proc.pid) if (out / "perf.data").exists() else None
        time.sleep(0.05)
    assert victim is not None, "no pmuprof-offcpu child"
    time.sleep(1)  # attached, its log line written
    os.kill(victim, signal.SIGKILL)
    res = finish(proc, timeout=300)
    one_line(res, 8, "pmuprof-offcpu was killed by SIGKILL before it wrote its stacks")
    offcpu = json.loads((out / "run.json").read_text())["offcpu"]
    assert offcpu["returncode"] == -9 and "killed by SIGKILL" in offcpu["why_not"], offcpu
    assert (out / "report.html").is_file()


def _room(run: Path, pid: int, start: int | None = None, boot: str | None = None) -> Path:
    """A room as a capture holds it: its first line names the capture, then zeros."""
    run.mkdir(parents=True, exist_ok=True)
    (run / "run.json").write_text(json.dumps({"pmuprof_version": "0.2.0", "command": ["pmuprof", "capture"]}))
    start = diskroom._started(pid) if start is None else start
    head = f"pmuprof-room\tpid={pid}\tstart={start}\tboot={boot or diskroom._boot()}\n".encode()
    (run / ".pmuprof-room").write_bytes(head + bytes(diskroom.room_bytes() - len(head)))
    return run / ".pmuprof-room"


def _gone_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _gone_room(run: Path) -> Path:
    """The room of a capture that was killed: its process is gone."""
    return _room(run, _gone_pid(), start=4242)


@pytest.mark.parametrize(
    "case, stale",
    [
        ("its capture is gone", True),
        ("another boot's", True),
        ("its pid now another process", True),
        ("its capture still runs", False),
        ("no first line of pmuprof's", False),
        ("a link", False),
    ],
)
def test_a_report_gives_back_only_a_room_proven_stale(pmuprof, tmp_path, case, stale):
    run = tmp_path / "run"
    run.mkdir()
    (run / "stacks.folded").write_text("mysqld;do_command;ut_delay 70\n")
    if case == "its capture is gone":
        room = _gone_room(run)
    elif case == "another boot's":
        room = _room(run, os.getpid(), boot="00000000-0000-0000-0000-000000000000")
    elif case == "its pid now another process":
        room = _room(run, os.getpid(), start=1)
    elif case == "its capture still runs":
        room = _room(run, os.getpid())
    elif case == "no first line of pmuprof's":
        room = _gone_room(run)
        room.write_bytes(bytes(4096))
    else:
        other = _gone_room(tmp_path / "elsewhere")
        room = run / ".pmuprof-room"
        room.symlink_to(other)
    assert pmuprof("report", run).code == 0
    assert os.path.lexists(room) is not stale
    if case == "a link":
        assert other.exists()


def test_retention_and_the_next_capture_give_back_a_stale_room(pmuprof, busy, tmp_path):
    base = tmp_path / "nightly"
    kept, live = _gone_room(base / "kept").parent, _room(base / "live", os.getpid()).parent
    res = pmuprof("schedule", "prune", "--dir", base, "--keep-days", "3650")
    assert res.code == 0, res.err
    assert not (kept / ".pmuprof-room").exists() and (live / ".pmuprof-room").exists()
    again = _gone_room(base / "again").parent
    res = pmuprof("capture", "-p", busy.pid, "-d", "1", "-o", base / "next", "--no-mysql", "--no-off-cpu")
    assert res.code == 0, res.err
    assert not (again / ".pmuprof-room").exists() and (live / ".pmuprof-room").exists()


class _Listener(threading.Thread):
    """A server socket that counts who connects (a socket another user put in an option file)."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.connected, self.done = 0, threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connected += 1
            conn.close()


@pytest.mark.parametrize("reader", ["my_print_defaults", "pmuprof's parser"])
def test_a_world_writable_option_file_is_ignored_with_a_warning(busy, tmp_path, reader):
    if reader == "my_print_defaults" and not Path("/usr/bin/my_print_defaults").exists():
        pytest.skip("my_print_defaults is not installed")
    evil = tmp_path / "evil.sock"
    listener = _Listener(evil)
    listener.start()
    cnf = tmp_path / "my.cnf"
    cnf.write_text(f"[client]\nsocket={evil}\nuser=planted\n")
    cnf.chmod(0o666)
    env = {"PMUPROF_MY_PRINT_DEFAULTS": "" if reader != "my_print_defaults" else "/usr/bin/my_print_defaults"}
    out = tmp_path / "run"
    try:
        res = finish(
            spawn_cli("capture", "-p", busy.pid, "-d", "1", "-o", out, "--no-off-cpu", "--defaults-file", cnf, env=env),
            timeout=300,
        )
    finally:
        listener.done.set()
        listener.join()
    assert res.code == 0, res.err
    warned = [line for line in res.err.splitlines() if "is world-writable: ignored" in line]
    assert len(warned) == 1 and str(cnf) in warned[0] and warned[0].startswith("pmuprof: warning:"), res.err
    assert listener.connected == 0, "pmuprof connected to the socket a world-writable file named"


def test_watch_says_once_that_captures_are_skipped_under_its_disk_floor(busy, tmp_path):
    proc = spawn_cli(
        "watch",
        "-p",
        busy.pid,
        "-t",
        "cpu>=0",
        "--cycles",
        "1",
        "--interval",
        "100ms",
        "--cooldown",
        "0",
        "--disk-free",
        "1000000G",
        "-o",
        tmp_path / "w",
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)  # type: ignore[arg-type]
    reader.start()
    deadline = time.monotonic() + 120
    while not any("capture skipped" in line for line in lines) and time.monotonic() < deadline:
        assert proc.poll() is None, "".join(lines)
        time.sleep(0.1)
    time.sleep(3)  # tens of polls more, each firing
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 143
    reader.join(timeout=10)
    res = Ran(proc.returncode, "", "".join(lines))
    skipped = [line for line in res.err.splitlines() if "capture skipped" in line]
    assert len(skipped) == 1 and "floor is 1024000000 MiB" in skipped[0], res.err
    summary = [line for line in res.err.splitlines() if "skipped under the disk floor" in line]
    assert len(summary) == 1 and int(summary[0].split("; ")[-1].split()[0]) >= 5, res.err


@pytest.mark.parametrize("cpus", ["0-99999999999", "0-abc", "7-3"])
def test_history_survives_a_damaged_cpus_allowed(pmuprof, tmp_path, cpus):
    base = tmp_path / "nightly"
    findings = {
        "pmuprof_version": "0.2.0",
        "profile": {"samples": 100},
        "findings": [{"rule": "innodb-spin-wait", "severity": "warning", "title": "spin", "share": 0.5}],
    }
    for n in range(1, 4):
        run = base / f"r{n}"
        run.mkdir(parents=True)
        meta = {
            "pmuprof_version": "0.2.0",
            "started": f"2026-01-0{n}T03:00:00Z",
            "duration_s": 5.0,
            "mode": "per-thread",
            "record": {"frequency": 99},
            "targets": [{"pid": 1, "label": "mysqld", "cpus_allowed": cpus if n == 3 else "0-1"}],
        }
        (run / "run.json").write_text(json.dumps(meta))
        (run / "stacks.folded").write_text("mysqld;do_command;ut_delay 50\nmysqld;do_command;row_search_mvcc 50\n")
        (run / "findings.json").write_text(json.dumps(findings))
    started = time.monotonic()
    res = pmuprof("history", base)
    assert res.code == 0 and "internal error" not in res.err, res.err
    assert time.monotonic() - started < 60 and (base / "index.html").is_file()
