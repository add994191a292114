"""Items 1, 7, 9: every output path writes only regular files, refuses or writes in place otherwise,
never follows a link, never replaces what pmuprof did not write, and fails in one line."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from .conftest import one_line

FOLDED = "mysqld;do_command;ut_delay 7\nmysqld;do_command;row_search_mvcc 3\n"


@pytest.fixture
def folded(tmp_path):
    path = tmp_path / "in.folded"
    path.write_text(FOLDED)
    return path


@pytest.mark.parametrize("command", ["export", "history"])
def test_a_character_device_is_written_in_place(pmuprof, folded, tmp_path, command):
    dev = tmp_path / "null"
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    args = ("export", folded, "-f", "folded", "-o", dev) if command == "export" else ("history", tmp_path, "-o", dev)
    assert pmuprof(*args).code == 0
    assert stat.S_ISCHR(os.lstat(dev).st_mode), "the device was replaced"


def test_export_to_a_fifo_writes_into_the_reader(pmuprof, folded, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    one_line(pmuprof("export", folded, "-f", "folded", "-o", fifo), 2, "FIFO with no reader")
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert pmuprof("export", folded, "-f", "folded", "--no-headers", "-o", fifo).code == 0
        assert os.read(reader, 1 << 16).decode() == "".join(sorted(FOLDED.splitlines(True)))
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("command", ["export", "history"])
def test_a_symlink_is_never_followed(pmuprof, folded, tmp_path, command):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    link = tmp_path / "out"
    link.symlink_to(victim)
    args = ("export", folded, "-f", "pprof", "-o", link) if command == "export" else ("history", tmp_path, "-o", link)
    one_line(pmuprof(*args), 2, "symbolic link")
    assert victim.read_text() == "keep me" and link.is_symlink()


NOBODY = 65534


def _foreign_link(link, target):
    """A symbolic link another user (nobody) owns, as one they planted in a shared directory."""
    if os.geteuid() != 0:
        pytest.skip("needs root to give a link to another user")
    link.symlink_to(target)
    os.lchown(link, NOBODY, NOBODY)
    return link


def test_another_users_link_to_a_directory_is_never_followed(pmuprof, folded, tmp_path):
    target = tmp_path / "theirs"
    target.mkdir()
    link = _foreign_link(tmp_path / "out", target)
    one_line(pmuprof("report", folded, "-o", link), 2, "owned by uid 65534", "another user's link")
    # a directory on the way counts as much as the last name
    one_line(pmuprof("export", folded, "-f", "pprof", "-o", link / "sub" / "x.pprof"), 2, "another user's link")
    assert list(target.iterdir()) == []


def test_another_users_link_under_dev_shm_is_never_followed(pmuprof, folded, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    link = _foreign_link(Path("/dev/shm") / f"pmuprof-test-{os.getpid()}", victim)
    try:
        one_line(pmuprof("export", folded, "-f", "pprof", "-o", link), 2, "another user's link")
    finally:
        link.unlink()
    assert victim.read_text() == "keep me"


def test_an_own_link_to_a_directory_is_followed(pmuprof, folded, tmp_path):
    target = tmp_path / "mine"
    target.mkdir()
    (tmp_path / "out").symlink_to(target)
    (tmp_path / "hop").symlink_to("out/../mine")
    assert pmuprof("report", folded, "-o", tmp_path / "hop").code == 0
    assert (target / "report.html").is_file()


def test_a_link_planted_in_a_run_directory_is_refused(pmuprof, folded, tmp_path):
    out = tmp_path / "rep"
    assert pmuprof("report", folded, "-o", out).code == 0
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    (out / "report.md").unlink()
    (out / "report.md").symlink_to(victim)
    one_line(pmuprof("report", folded, "-o", out), 2, "report.md is a symbolic link")
    assert victim.read_text() == "keep me"


def test_report_refuses_a_directory_it_did_not_write(pmuprof, folded, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "report.md").write_text("my own notes")
    one_line(pmuprof("report", folded, "-o", out), 2, "not written by pmuprof")
    assert (out / "report.md").read_text() == "my own notes"
    assert pmuprof("report", folded, "-o", out, "--force").code == 0
    assert "ut_delay" in (out / "report.md").read_text()


def test_report_refuses_another_inputs_report_and_another_run(pmuprof, folded, tmp_path):
    out = tmp_path / "rep"
    assert pmuprof("report", folded, "-o", out).code == 0
    assert pmuprof("report", folded, "-o", out).code == 0, "the same input may be reported again"
    other = tmp_path / "other.folded"
    other.write_text("mysqld;x 1\n")
    one_line(pmuprof("report", other, "-o", out), 2, "report of another input")
    assert json.loads((out / "findings.json").read_text())["profile"]["source"] == str(folded)
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text('{"pmuprof_version": "0.1.0"}')
    one_line(pmuprof("report", folded, "-o", run), 2, "another pmuprof run directory")


@pytest.mark.parametrize("command", ["capture", "report", "export", "history", "diff"])
def test_read_only_output_is_one_line_exit_6(pmuprof, folded, tmpfs, command):
    ro = tmpfs(1, readonly=True)
    args = {
        "capture": ("capture", "-p", os.getpid(), "--no-mysql", "-d", "1", "-o", ro / "x"),
        "report": ("report", folded, "-o", ro / "x"),
        "export": ("export", folded, "-f", "folded", "-o", ro / "x"),
        "history": ("history", folded.parent, "-o", ro / "x.html"),
        "diff": ("diff", folded, folded, "-o", ro / "x"),
    }[command]
    assert "read-only" in one_line(pmuprof(*args), 6).lower()


def test_missing_output_parent_is_one_line_exit_2(pmuprof, folded, tmp_path):
    one_line(
        pmuprof("export", folded, "-f", "pprof", "-o", tmp_path / "no" / "such" / "x.pb.gz"),
        2,
        "No such file or directory",
    )


def test_a_failed_write_leaves_the_old_file_whole(pmuprof, folded, tmpfs):
    fs = tmpfs(1)
    target = fs / "out.folded"
    target.write_text("old\n")
    (fs / "fill").write_bytes(b"\0" * (fs.stat().st_size or 0))
    with open(fs / "fill", "ab") as fh:  # fill the filesystem to the last block
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    big = fs.parent / "big.folded"
    big.write_text("".join(f"mysqld;f{i} 1\n" for i in range(50000)))
    one_line(pmuprof("export", big, "-f", "folded", "-o", target), 6, "No space left")
    assert target.read_text() == "old\n" and [p.name for p in fs.iterdir() if p.name.endswith(".tmp")] == []
