"""Who used the CPUs over the window (capture/proc/cpuusers.py): /proc scans at the start and the end."""

from __future__ import annotations

from pathlib import Path

from pmuprof.capture.proc import cpuusers
from pmuprof.report.facts import cpu_user_rows


def _proc(root: Path, procs: dict[int, tuple[str, int, int, int, str]]) -> Path:
    """A fake /proc: pid -> (comm, utime, stime, start time, cgroup)."""
    for pid, (comm, utime, stime, start, cgroup) in procs.items():
        d = root / str(pid)
        d.mkdir(parents=True, exist_ok=True)
        rest = ["S", "1", "1", "1", "0", "-1", "0", "0", "0", "0", "0", str(utime), str(stime)] + ["0"] * 6
        (d / "stat").write_text(f"{pid} ({comm}) " + " ".join(rest + [str(start), "0"]) + "\n")
        (d / "cgroup").write_text(f"0::{cgroup}\n")
    return root


def test_the_window_s_cpu_time_per_process_and_cgroup(tmp_path):
    before = cpuusers.scan(
        _proc(
            tmp_path / "a",
            {
                10: ("mariadbd", 100, 50, 5, "/system.slice/mariadb.service"),
                20: ("hog (x) y", 0, 0, 7, "/user.slice"),  # a comm with blanks and parentheses
                30: ("gone", 10, 0, 9, "/user.slice"),  # ends inside the window: not counted
                40: ("old", 500, 0, 11, "/user.slice"),  # its pid is reused inside the window
            },
        )
    )
    root = _proc(
        tmp_path / "b",
        {
            10: ("mariadbd", 150, 70, 5, "/system.slice/mariadb.service"),
            20: ("hog (x) y", 380, 20, 7, "/user.slice"),
            40: ("new", 30, 0, 900, "/user.slice"),  # born inside the window: all its time counts
            50: ("idle", 0, 0, 13, "/"),
        },
    )
    after = cpuusers.scan(root)
    got = cpuusers.users(before, after, 5.0, 2, (10,), lambda pid: cpuusers.cgroup_of(pid, root), 100.0)
    assert [(u.name, u.pid, u.cpu_s, u.share, u.target) for u in got.processes] == [
        ("hog (x) y", 20, 4.0, 0.4, False),
        ("mariadbd", 10, 0.7, 0.07, True),
        ("new", 40, 0.3, 0.03, False),
    ]
    assert [(g.name, g.cpu_s, g.target) for g in got.cgroups] == [
        ("/user.slice", 4.3, False),
        ("/system.slice/mariadb.service", 0.7, True),
    ]
    assert got.targets_share == 0.07 and got.seen == 3 and got.counted_share == 0.5
    rows = {r["label"]: r["value"] for r in cpu_user_rows(got)}
    assert rows["CPU users"].startswith("hog (x) y (pid 20) 40 %, mariadbd (pid 10) — target 7 %")
    assert rows["the targets' share"] == "7.0 % of all CPUs' time"


def test_an_empty_window_is_none_and_the_card_has_no_rows():
    assert cpuusers.users({}, {}, 0.0, 2, (), lambda pid: "", 100.0) is None
    assert cpu_user_rows(None) == []


def test_the_saturation_finding_is_a_share_of_the_host_s_time_and_names_who_used_it():
    import sys
    from pathlib import Path as P

    sys.path.insert(0, str(P(__file__).resolve().parents[1]))
    from rules.conftest import FIXTURES, load_fixture
    from pmuprof.findings.engine import evaluate

    profile, _ = load_fixture(FIXTURES / "host-saturated" / "fire-hogs-beside-commits.folded")
    host = next(f for f in evaluate(profile) if f.rule == "host-saturated")
    assert host.confidence is not None and host.confidence.basis.startswith("the host's CPU time")
    assert "stress-ng-cpu (pid 4242) 40%" in host.message and "By cgroup: /user.slice" in host.message
