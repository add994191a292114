"""Issue 26, files another local user controls: a /tmp/perf-PID.map that is a link to /dev/zero, a FIFO,
another user's file or a huge file is skipped with a warning by pmuprof-perfdata (no hang, no growth)."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, build_busy, need_perf
from shared import native_make

from pmuprof.tools.native import perfdata as perfdata_reader

PD_JIT = REPO / "tests" / "native" / "progs" / "pd_jit.c"
MAP_LIMIT = 64 << 20  # the reader's bound on a perf map's size


def _reader() -> Path:
    path = REPO / "native" / "build" / "pmuprof-perfdata"
    with native_make():
        res = subprocess.run(
            ["make", "-C", str(REPO / "native"), "build/pmuprof-perfdata"], capture_output=True, text=True
        )
    if res.returncode != 0 or not path.is_file():
        pytest.skip(f"pmuprof-perfdata does not build here: {res.stderr.strip()[-300:]}")
    return path


@pytest.fixture(scope="module")
def jit_recording(tmp_path_factory):
    """A perf.data of pd_jit (code run from anonymous executable memory named in /tmp/perf-PID.map), and
    that map's path; the map is removed afterwards."""
    need_perf()
    reader = _reader()
    tmp = tmp_path_factory.mktemp("jit")
    exe, data = tmp / "pd_jit", tmp / "jit.data"
    subprocess.run(["gcc", "-O1", "-fno-omit-frame-pointer", str(PD_JIT), "-ldl", "-o", str(exe)], check=True)
    env = {**os.environ, "HOME": str(tmp)}
    res = subprocess.run(
        ["perf", "record", "-q", "-g", "-F", "999", "-o", str(data), "--", str(exe), "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if res.returncode != 0:
        pytest.skip(f"perf record does not work here: {res.stderr.strip()[-200:]}")
    meta = tmp / "meta.json"
    out = subprocess.run(
        [str(reader), "--meta", str(meta), str(data)], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    maps = [d["path"] for d in json.loads(meta.read_text())["dsos"] if d["path"].startswith("/tmp/perf-")]
    assert len(maps) == 1 and "jitted_loop[hot]" in out.stdout, out.stdout[-2000:]
    yield {"reader": reader, "data": data, "map": Path(maps[0]), "env": env, "text": Path(maps[0]).read_text()}
    Path(maps[0]).unlink(missing_ok=True)


def _cli(*args: str, home: Path, timeout: float) -> subprocess.CompletedProcess:
    """run_cli in its own session, killed with all it started when it outlives ``timeout`` (a regression
    then fails the test instead of leaving a perf script spinning)."""
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pmuprof", *args],
        env=env,
        text=True,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # a reader that grows fails instead of swapping


def _replace(path: Path, case: str, text: str) -> None:
    path.unlink(missing_ok=True)
    if case == "link-to-dev-zero":
        path.symlink_to("/dev/zero")
    elif case == "fifo":
        os.mkfifo(path, 0o600)
    elif case == "other-users-file":
        path.write_text(text)
        os.chown(path, 65534, 65534)
    elif case == "larger-than-64-MiB":
        with open(path, "w") as f:
            f.write(text)
            f.truncate(MAP_LIMIT + 1)  # sparse: costs no disk


@pytest.mark.parametrize("case", ["link-to-dev-zero", "fifo", "other-users-file", "larger-than-64-MiB"])
def test_untrusted_perf_map_is_skipped_with_a_warning(jit_recording, case):
    lab = jit_recording
    _replace(lab["map"], case, lab["text"])
    try:
        res = subprocess.run(
            [str(lab["reader"]), str(lab["data"])],
            env=lab["env"],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=_limited,
        )  # generous: the whole read takes well under a second
    except subprocess.TimeoutExpired:
        pytest.fail(f"pmuprof-perfdata hung on a /tmp/perf-PID.map that is a {case}")
    finally:
        lab["map"].unlink(missing_ok=True)
        lab["map"].write_text(lab["text"])
    assert res.returncode == 0, res.stderr
    warnings = [ln for ln in res.stderr.splitlines() if "warning" in ln and str(lab["map"]) in ln]
    assert len(warnings) == 1, res.stderr
    assert "jitted_loop[hot]" not in res.stdout and "[perf-" in res.stdout


def test_recorded_binary_path_that_is_now_a_fifo_is_skipped_with_a_warning(tmp_path):
    """Issue 26 case 2: `pmuprof report` of a perf.data whose MMAP2 file name is a FIFO ends (with the binary
    named as not read) instead of blocking in open() forever."""
    need_perf()
    folder = tmp_path / "bin"
    folder.mkdir()
    exe, data = build_busy(folder), tmp_path / "perf.data"
    res = subprocess.run(
        ["perf", "record", "-q", "-N", "-g", "-F", "999", "-o", str(data), "--", str(exe), "0.5"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    if res.returncode != 0:
        pytest.skip(f"perf record does not work here: {res.stderr.strip()[-200:]}")
    exe.unlink()
    os.mkfifo(exe, 0o600)
    try:
        res = _cli("report", str(data), "--comm", exe.name, "-o", str(tmp_path / "out"), home=tmp_path, timeout=180)
    except subprocess.TimeoutExpired:
        pytest.fail("pmuprof report hung on a recorded binary path that is a FIFO")
    assert res.returncode == 0, res.stderr
    warned = [ln for ln in res.stderr.splitlines() if ln.startswith("pmuprof: warning:") and f"{exe}: a FIFO" in ln]
    assert len(warned) == 1, res.stderr


@pytest.mark.parametrize("extra", [[], ["--symfs", "."]], ids=["native-reader", "perf-script-only"])
def test_perf_data_with_an_impossible_data_size_fails_fast_without_perf_script(tmp_path, extra):
    """Issue 26 case 3: data_size = 2^64-1 (the data section would end past 2^64 bytes). The native reader
    refuses it, and perf script, which loops on such a header, is not tried: one line names the file.
    With --symfs perf script is the only reader: the same header check runs before it."""
    need_perf()
    data = tmp_path / "perf.data"
    res = subprocess.run(
        ["perf", "record", "-q", "-N", "-g", "-F", "999", "-o", str(data), "--", "sleep", "0.2"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    if res.returncode != 0:
        pytest.skip(f"perf record does not work here: {res.stderr.strip()[-200:]}")
    raw = bytearray(data.read_bytes())
    raw[48:56] = (2**64 - 1).to_bytes(8, "little")  # perf_file_header.data.size
    data.write_bytes(bytes(raw))
    _reader()
    try:  # generous: reading the header takes well under a second; perf script looped for hours
        res = _cli("report", str(data), *extra, "-o", str(tmp_path / "out"), home=tmp_path, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("pmuprof report did not end on a perf.data whose data size is 2^64-1")
    assert res.returncode == 3, res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("pmuprof: error:")]
    assert len(errors) == 1 and "Traceback" not in res.stderr, res.stderr
    assert str(data) in errors[0] and "corrupt" in errors[0] and "re-record" in errors[0], errors[0]


def test_skipped_perf_map_reaches_the_report_warnings(jit_recording):
    """The reader's warning is not lost behind its exit 0: the Python client makes it a run warning."""
    lab = jit_recording
    _replace(lab["map"], "link-to-dev-zero", lab["text"])
    try:
        got = perfdata_reader.fold_perf_data_native(lab["data"], binary=lab["reader"])
    finally:
        lab["map"].unlink(missing_ok=True)
        lab["map"].write_text(lab["text"])
    assert [w for w in got.result.warnings() if str(lab["map"]) in w and "symbolic link" in w], got.result.warnings()


def test_helper_refuses_a_binary_that_is_a_fifo(tmp_path):
    """pmuprof-helper (funcs: the off-CPU symbolizer and unnamed-code grouping) is given the target's DSO
    paths; one replaced by a FIFO must fail at once, not block in open() forever."""
    with native_make():
        res = subprocess.run(
            ["make", "-C", str(REPO / "native"), "build/pmuprof-helper"], capture_output=True, text=True
        )
    helper = REPO / "native" / "build" / "pmuprof-helper"
    if res.returncode != 0 or not helper.is_file():
        pytest.skip(f"pmuprof-helper does not build here: {res.stderr.strip()[-300:]}")
    path = tmp_path / "libgone.so"
    os.mkfifo(path, 0o600)
    try:
        res = subprocess.run(
            [str(helper), "funcs", "--binary", str(path)],
            input="0x1000\n",
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=_limited,
        )  # generous: it fails at once
    except subprocess.TimeoutExpired:
        pytest.fail("pmuprof-helper hung on a binary path that is a FIFO")
    assert res.returncode != 0 and "Traceback" not in res.stderr, (res.stdout, res.stderr)


def test_perfdata_reader_given_a_fifo_says_so_at_once(tmp_path):
    """`pmuprof-perfdata FIFO` blocked in open() waiting for a writer; it now exits 3 (not a regular file)."""
    reader = _reader()
    fifo = tmp_path / "perf.data"
    os.mkfifo(fifo, 0o600)
    try:
        res = subprocess.run([str(reader), str(fifo)], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("pmuprof-perfdata hung on a FIFO given as the perf.data")
    assert res.returncode == perfdata_reader.UNSUPPORTED and "not a regular file" in res.stderr, res.stderr


def test_server_named_files_that_are_fifos_are_not_read(tmp_path):
    """The server names its error log and pid file (@@log_error, @@pid_file), files the mysql user owns and
    may replace: a FIFO there is noted as unreadable instead of blocking the capture in open()."""
    log, pid_file = tmp_path / "error.log", tmp_path / "mysqld.pid"
    os.mkfifo(log, 0o600)
    os.mkfifo(pid_file, 0o600)
    code = (
        "import json; from pmuprof.capture.mysql import facts; missing = []; "
        f"log = facts._error_log({{'log_error': {str(log)!r}}}, None, True, missing); "
        f"pid = facts._server_pid({{'pid_file': {str(pid_file)!r}}}, True); "
        "print(json.dumps([log, pid, missing]))"
    )
    try:
        res = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=60,
        )  # generous: it answers at once
    except subprocess.TimeoutExpired:
        pytest.fail("reading a server-named file that is a FIFO blocked")
    assert res.returncode == 0, res.stderr
    log_facts, pid, missing = json.loads(res.stdout)
    assert log_facts["memory_barrier"] is None and pid is None
    assert any(f"error log {log} unreadable" in m and "FIFO" in m for m in missing), missing
