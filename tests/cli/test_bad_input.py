"""Every bad input gives one clear line and a distinct exit code (fake perf only at argv level)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import cli


def _one_line_error(res, code, *needles):
    assert res.returncode == code, res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("pmuprof: error:")]
    assert len(errors) == 1 and res.stderr.rstrip().endswith(errors[0]), res.stderr
    assert "Traceback" not in res.stderr
    for needle in needles:
        assert needle in errors[0]


def test_wrong_pid():
    _one_line_error(cli("record", "-p", "999999999", "--no-mysql", "-d", "1"), 4, "no process with pid")


def test_perf_missing(tmp_path):
    env = {"PMUPROF_PERF": str(tmp_path / "no-perf")}
    res = cli("record", "-p", str(os.getpid()), "--no-mysql", "-d", "1", "-o", str(tmp_path / "r"), env=env)
    _one_line_error(res, 5, "perf is not installed", "apt-get install linux-perf")


FAKE_PERF = """#!/bin/sh
case "$1" in
  version) echo "perf version 6.1.0";;
  record) echo "Error: Access to performance monitoring and observability operations is limited." >&2
          echo "Consider adjusting /proc/sys/kernel/perf_event_paranoid setting" >&2; exit 255;;
  stat) case "$*" in *" -a"*) exec sleep 30;; esac;;
esac
"""


def test_perf_forbidden_by_paranoid(tmp_path):
    fake = tmp_path / "perf"
    fake.write_text(FAKE_PERF)
    fake.chmod(0o755)
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        res = cli(
            "record",
            "-p",
            str(target.pid),
            "--no-mysql",
            "-d",
            "5",
            "-o",
            str(tmp_path / "r"),
            env={"PMUPROF_PERF": str(fake)},
        )
    finally:
        target.kill()
    _one_line_error(res, 5, "not allowed to profile", "perf_event_paranoid")
    out = subprocess.run(["pgrep", "-f", f"{tmp_path}/perf stat"], capture_output=True, text=True).stdout
    assert not out.strip(), "perf stat was orphaned"


def test_existing_output_dir_is_refused(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    res = cli("record", "-p", str(os.getpid()), "--no-mysql", "-o", str(tmp_path))
    _one_line_error(res, 2, "not empty")
    assert (tmp_path / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize(
    "content,needle",
    [
        (b"", "empty"),
        (b"PERFILE2" + b"\0" * 64, "corrupt"),
        (b"a;b;c 1\nnot folded at all\n", "not a folded stack line"),
    ],
)
def test_bad_report_inputs(tmp_path, content, needle):
    bad = tmp_path / "input"
    bad.write_bytes(content)
    res = cli("report", str(bad), "-o", str(tmp_path / "out"))
    _one_line_error(res, 3, needle)


def test_truncated_perf_script_still_reports(tmp_path):
    text = (
        "pmuprof-demo  10/10\n\t 1 ut_delay+0x4 (/x)\n\t 2 fil_space_get+0x8 (/x)\n\n"
        "pmuprof-demo  10/11\n\t 1 ut_delay+0x4 (/x)\n\t 2 fil_sp"
    )
    src = tmp_path / "script.txt"
    src.write_text(text)
    res = cli("report", str(src), "--json")
    assert res.returncode == 0, res.stderr
    assert '"samples": 1' in res.stdout


def test_disk_check_refuses_before_recording(tmp_path):
    from pmuprof.capture.record import check_disk
    from pmuprof.errors import ResourceError

    with pytest.raises(ResourceError, match="not enough free disk"):
        check_disk(Path(tmp_path), 1 << 60)


_SAMPLE = "{head}   334.28{n}: cpu-clock:pppH: \n\t 150af ut_delay+0x4 (/usr/sbin/mariadbd)\n\t 2 fil_space_get+0x8 (/usr/sbin/mariadbd)\n\n"


def _script(tmp_path, head: str) -> Path:
    src = tmp_path / "script.txt"
    src.write_text("".join(_SAMPLE.format(head=head, n=n) for n in range(10, 20)))
    return src


def test_script_text_without_thread_ids_says_which_fields(tmp_path):
    res = cli("report", str(_script(tmp_path, "mariadbd")), "--pid", "4242", "-o", str(tmp_path / "out"))
    _one_line_error(res, 3, "none of its", "-F comm,tid,time,event,ip,sym,dso")


def test_pid_on_script_text_with_thread_ids_only(tmp_path):
    src = _script(tmp_path, "mariadbd 4242")
    res = cli("report", str(src), "--pid", "999", "-o", str(tmp_path / "none"))
    _one_line_error(res, 3, "no samples of pid 999", "no pid field", "perf script -F +pid")
    res = cli("report", str(src), "--pid", "4242", "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    assert "--pid 4242 chose threads by name" in res.stderr
