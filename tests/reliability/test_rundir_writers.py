"""Issue 34, the run directory as a trust boundary for every writer: pmuprof creates it (new, mode 0700, an
unpredictable default name) where no other user can swap it, or refuses; nothing another local user (nobody)
plants, before or during a capture, makes root write through it. Real perf on the suite's busy process."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from helpers import REPO

from pmuprof.capture.offcpu import tracer
from pmuprof.rundir_create import unique_name

from .conftest import finish, one_line, running_busy, spawn_cli
from .localuser import NOBODY, Victim, as_nobody, foreign_link, need_root, public_dir, run_as_nobody

# Every file written in a run directory, and who writes it (docs/internals.md's table)
WRITERS = {
    "run.json": "pmuprof (capture/record.py)",
    "perf.data": "perf record",
    "perf-stat.csv": "perf stat (--log-fd)",
    "perf-record.log": "perf record's stderr",
    "perf-stat.log": "perf stat's stderr",
    "offcpu.out": "pmuprof-offcpu",
    "offcpu.log": "pmuprof-offcpu's stderr",
    "offcpu.folded": "pmuprof (capture/offcpu)",
    "threads.json": "pmuprof (capture/offcpu)",
    "recovered-callers.tsv": "pmuprof (capture/offcpu)",
    "processlist.tsv": "the processlist poller",
    "counters.json": "pmuprof (perf stat's CSV)",
    "mysql.json": "pmuprof (server facts)",
    ".pmuprof-room": "pmuprof (capture/diskroom.py)",
    ".perf-ctl": "pmuprof (perf's control FIFO)",
    "kallsyms.gz": "pmuprof (capture/proc/kernel.py)",
    "binaries.tar.gz": "pmuprof (capture/proc/archive.py)",
    "stacks.folded": "pipeline.materialize",
    "samples.tsv": "pipeline.materialize",
    "leaves.tsv": "pipeline.materialize",
    "analysis.json": "pipeline.materialize",
    "report.html": "the report writers",
    "findings.json": "the report writers",
}

# nobody plants a link to the victim at each name, in a loop, and says what each attempt met
PLANT = r"""
import json, os, sys, time
base, names, victim, seconds, when = sys.argv[1], sys.argv[2].split(","), sys.argv[3], float(sys.argv[4]), sys.argv[5]
if when == "own-dir":
    os.mkdir(base)
    os.chmod(base, 0o777)
met = {name: set() for name in names}
until, stop = time.time() + seconds, base + ".stop"  # the test makes the .stop file when the capture is over
while time.time() < until and not os.path.exists(stop):
    if when == "own-dir" and not os.path.exists(os.path.join(base, "run.json")):
        time.sleep(0.002)  # planted after the emptiness check: run.json is written right after it
        continue
    if when == "watch" and not os.path.isdir(base):
        time.sleep(0.002)  # root's capture has not made it yet
        continue
    for name in names:
        try:
            os.symlink(victim, os.path.join(base, name))
            met[name].add("planted")
        except OSError as err:
            met[name].add(os.strerror(err.errno))
    if when == "watch":
        try:
            os.rename(base, base + ".stolen")
            met["rename"] = {"renamed"}
        except OSError as err:
            met.setdefault("rename", set()).add(os.strerror(err.errno))
    time.sleep(0.01)
print(json.dumps({name: sorted(v) for name, v in met.items()}))
"""


@pytest.fixture(scope="module")
def public():
    path = public_dir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _off_cpu() -> tuple[str, ...]:
    return ("--off-cpu",) if not tracer.unavailable([os.getpid()])[0] else ("--no-off-cpu",)


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_directory_another_user_made_is_refused_before_anything_is_written(pmuprof, busy, public, tmp_path, name):
    """nobody makes the -o directory (mode 0777, empty) and plants a link at ``name`` once run.json shows
    the emptiness check passed: root's capture refuses the directory at once, so nothing writes through it."""
    victim = Victim(tmp_path / "victim", b"root only: never truncated\n")
    run = public / f"theirs-{name.strip('.')}"
    planter = as_nobody(PLANT, str(run), name, str(victim.path), "30", "own-dir")
    try:
        deadline = time.monotonic() + 30
        while not run.is_dir() and time.monotonic() < deadline:
            time.sleep(0.01)
        res = pmuprof("capture", "-p", busy.pid, "-d", "1", "-o", run, "--no-mysql", *_off_cpu())
    finally:
        planter.kill()
        planter.communicate()
    one_line(res, 2, str(run), f"owned by uid {NOBODY}", "pmuprof creates its run directory itself")
    assert victim.unchanged() and not (run / "run.json").exists() and not (run / name).exists()


def _predictable(public: Path, comm: str, seconds: int) -> list[Path]:
    """nobody makes the directories the old default name would use for the next ``seconds`` (0777, empty)."""
    now = time.time()
    names = [
        public / f"pmuprof-{comm}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(now + s))}" for s in range(-2, seconds)
    ]
    run_as_nobody("import os, sys\nfor p in sys.argv[1:]:\n    os.mkdir(p)\n    os.chmod(p, 0o777)\n", *map(str, names))
    return names


@pytest.fixture(scope="module")
def captures(duty_exe, public, tmp_path_factory):
    """Four captures at once: into a new directory while nobody tries to plant a link at every writer's name
    and to rename it away; with --share; into an existing empty private directory (mktemp -d); with the
    default name in a directory all users may write, after nobody made every name the old default would use.
    The busy process runs for the captures only."""
    need_root()
    with running_busy(duty_exe) as busy:
        return _captures(busy, public, tmp_path_factory)


def _captures(busy, public, tmp_path_factory):
    victim = Victim(tmp_path_factory.mktemp("victim") / "victim", b"root only\n")
    comm = Path(f"/proc/{busy.pid}/comm").read_text().strip()
    taken = _predictable(public, comm, 300)  # five minutes of names: a loaded host starts a capture slowly
    private, shared = public / "private", public / "shared"
    made = Path(tempfile.mkdtemp(dir=public))  # mode 0700, root's: what mktemp -d makes
    planter = as_nobody(PLANT, str(private), ",".join(WRITERS), str(victim.path), "900", "watch")
    procs = {
        "private": spawn_cli("capture", "-p", busy.pid, "-d", "4", "-o", private, "--no-mysql", *_off_cpu()),
        "shared": spawn_cli("capture", "-p", busy.pid, "-d", "2", "-o", shared, "--no-mysql", "--share"),
        "mktemp": spawn_cli("capture", "-p", busy.pid, "-d", "2", "-o", made, "--no-mysql"),
        "default": subprocess.Popen(
            [sys.executable, "-m", "pmuprof", "capture", "-p", str(busy.pid), "-d", "2", "--no-mysql"],
            cwd=public,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            text=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ),
    }
    results = {case: finish(proc, timeout=600) for case, proc in procs.items()}
    Path(f"{private}.stop").touch()
    out, _ = planter.communicate(timeout=60)
    mine = [p for p in public.glob(f"pmuprof-{comm}-*") if p not in taken]
    return {
        "results": results,
        "dirs": {"private": private, "shared": shared, "mktemp": made, "default": mine[0] if len(mine) == 1 else None},
        "planted": json.loads(out) if out.strip() else {},
        "victim": victim,
        "taken": taken,
    }


@pytest.mark.parametrize("name", list(WRITERS))
def test_no_other_user_can_plant_anything_in_a_capture_s_run_directory(captures, name):
    """While perf, perf stat, the tracer and pmuprof write, nobody's every attempt at ``name`` is refused by
    the directory's mode (0700), and what the capture left there is root's own regular file."""
    res = captures["results"]["private"]
    assert res.code == 0, res.err
    run, planted = captures["dirs"]["private"], captures["planted"]
    assert planted.get(name) == ["Permission denied"], planted
    assert captures["victim"].unchanged()
    assert stat.S_IMODE(run.stat().st_mode) == 0o700 and run.stat().st_uid == 0
    if os.path.lexists(run / name):
        st = os.lstat(run / name)
        assert st.st_uid == 0 and (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)), name


def test_another_user_cannot_rename_the_run_directory_away(captures):
    assert captures["planted"].get("rename") == ["Operation not permitted"], captures["planted"]
    assert (captures["dirs"]["private"] / "report.html").is_file()


def test_the_default_name_cannot_be_made_first_by_another_user(captures):
    """nobody made every directory the old name (pmuprof-<comm>-<time>) would use: the capture made its own,
    with 32 random bits more in the name, and left theirs empty."""
    res, run = captures["results"]["default"], captures["dirs"]["default"]
    assert res.code == 0, res.err
    assert run is not None and str(run.name) in res.err, res.err
    assert run.stat().st_uid == 0 and stat.S_IMODE(run.stat().st_mode) == 0o700
    assert (run / "report.html").is_file()
    assert all(p.stat().st_uid == NOBODY and not any(p.iterdir()) for p in captures["taken"])
    assert unique_name("x") != unique_name("x")


def test_an_empty_private_directory_of_the_caller_is_accepted(captures):
    res, run = captures["results"]["mktemp"], captures["dirs"]["mktemp"]
    assert res.code == 0, res.err
    assert (run / "report.html").is_file() and stat.S_IMODE(run.stat().st_mode) == 0o700


def test_share_lets_others_read_without_kernel_addresses(captures):
    res, run = captures["results"]["shared"], captures["dirs"]["shared"]
    assert res.code == 0, res.err
    assert stat.S_IMODE(run.stat().st_mode) == 0o755
    assert not (run / "kallsyms.gz").exists()
    assert "--share" in json.loads((run / "run.json").read_text())["kernel_symbols"]["why_not"]
    assert stat.S_IMODE((run / "perf.data").stat().st_mode) == 0o600
    listed = run_as_nobody("import os, sys\nprint(len(open(sys.argv[1]).read()))\n", str(run / "stacks.folded"))
    assert int(listed) > 0
    private = captures["dirs"]["private"]
    proc = as_nobody("import sys\nopen(sys.argv[1]).read()\n", str(private / "stacks.folded"))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "Permission denied" in err


def test_processlist_rows_of_a_shared_run_have_no_user_db_or_statement():
    from pmuprof.capture.mysql.poll import row_line

    row = (7, 1234, "app", "shop", "Query", "Sending data", 3, "SELECT * FROM t WHERE secret = 'x'")
    assert "secret" in row_line(5, row) and "app" in row_line(5, row)
    assert row_line(5, row, shared=True) == "5\t1234\t7\t\t\tQuery\tSending data\t3\t\n"


@pytest.mark.parametrize(
    "layout",
    ["parent owned by nobody", "parent writable by all, no sticky bit", "own directory mode 0755", "a link by nobody"],
)
def test_a_run_directory_another_user_could_swap_is_refused(pmuprof, busy, public, tmp_path, layout):
    """The directory the run directory goes in must be one only root (and the caller) can change: else its
    owner could rename the run directory away and put one of theirs, with links, in its place."""
    base = Path(tempfile.mkdtemp(dir=public))
    base.chmod(0o755)
    if layout == "parent owned by nobody":
        os.chown(base, NOBODY, NOBODY)
        out, needle = base / "run", f"{base} is owned by uid {NOBODY}"
    elif layout == "parent writable by all, no sticky bit":
        base.chmod(0o777)
        out, needle = base / "run", f"{base} is writable by group and others"
    elif layout == "own directory mode 0755":
        (base / "run").mkdir(mode=0o755)
        out, needle = base / "run", "an existing run directory must be yours with mode 0700"
    else:
        (base / "real").mkdir()
        out, needle = foreign_link(base / "run", base / "real"), "owned by uid 65534"
    res = pmuprof("capture", "-p", busy.pid, "-d", "1", "-o", out, "--no-mysql")
    one_line(res, 2, needle)
    assert not any(p.name == "run.json" for p in base.rglob("*"))


@pytest.mark.parametrize("command", ["record", "demo"])
def test_every_command_that_records_refuses_a_directory_another_user_made(pmuprof, busy, public, command):
    """record and demo make their run directory as capture does (the capture case is above): nobody's empty
    -o directory (mode 0777) is refused before perf or the demo's workload starts."""
    run = public / f"theirs-{command}"
    run_as_nobody("import os, sys\nos.mkdir(sys.argv[1])\nos.chmod(sys.argv[1], 0o777)\n", str(run))
    args = ("-p", busy.pid, "-d", "1", "--no-mysql") if command == "record" else ("-d", "1")
    one_line(pmuprof(command, *args, "-o", run), 2, str(run), f"owned by uid {NOBODY}")
    assert not any(run.iterdir())


def _planted_watch_run(base: Path) -> Path:
    """A run directory nobody made where watch keeps its runs: a watch capture's run.json, a year old (what
    retention deletes first), and a file by a name pmuprof writes."""
    run = base / "20250101-000000-cpu"
    meta = {"pmuprof_version": "0.2.0", "command": ["pmuprof", "watch"], "started": "2025-01-01T00:00:00Z"}
    code = (
        "import json, os, sys\nos.mkdir(sys.argv[1])\n"
        "open(os.path.join(sys.argv[1], 'run.json'), 'w').write(sys.argv[2])\n"
        "open(os.path.join(sys.argv[1], 'report.html'), 'w').write('theirs')\n"
    )
    run_as_nobody(code, str(run), json.dumps({**meta, "trigger": {"condition": "cpu>=0"}}))
    return run


@pytest.mark.parametrize("layout", ["owned by nobody", "writable by all, sticky"])
def test_watch_and_retention_refuse_a_runs_directory_another_user_can_change(pmuprof, busy, public, layout):
    """watch -o and schedule prune --dir hold runs that retention reads and deletes from: where another user
    can add entries (their own directory, or one like /tmp), they could plant a run there and swap it for a
    link to root's files between the check and the deletion. Both refuse in one line, read and delete nothing."""
    base = Path(tempfile.mkdtemp(dir=public))
    if layout == "owned by nobody":
        os.chown(base, NOBODY, NOBODY)
        base.chmod(0o755)
        needle = f"{base} is owned by uid {NOBODY}"
    else:
        base.chmod(0o1777)
        needle = f"{base} is writable by group and others (mode 1777)"
    run = _planted_watch_run(base)
    watch = ("watch", "-p", busy.pid, "-t", "cpu>=0", "--cycles", "1", "--interval", "100ms", "-d", "1", "-o", base)
    for command in (watch, ("schedule", "prune", "--dir", base, "--keep-days", "1")):
        one_line(pmuprof(*command), 2, needle, "another user could plant or swap run directories there")
    assert sorted(p.name for p in run.iterdir()) == ["report.html", "run.json"]
    assert [p.name for p in base.iterdir()] == [run.name]


def test_a_report_into_its_run_directory_refuses_a_planted_link_and_writes_nothing_through_it(pmuprof, busy, tmp_path):
    """``pmuprof report RUN`` writes its outputs into RUN: a link another user left at an output's name (a run
    directory that arrived with it) is refused in one line; its target is never written."""
    run = tmp_path / "run"
    res = pmuprof("capture", "-p", busy.pid, "-d", "1", "-o", run, "--no-mysql", "--no-off-cpu")
    assert res.code == 0, res.err
    for name in ("report.html", "report.md", "findings.json", "flame.svg"):
        victim = Victim(tmp_path / f"victim-{name}", b"root only\n")
        (run / name).unlink(missing_ok=True)
        foreign_link(run / name, victim.path)
        one_line(pmuprof("report", run), 2, f"{run / name} is a symbolic link owned by uid {NOBODY}")
        assert victim.unchanged() and os.path.islink(run / name), name
        (run / name).unlink()
