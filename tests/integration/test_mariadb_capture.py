"""pmuprof capture on a real, stripped Debian mariadbd under sysbench load (issue 5)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import capture_under, need_perf, run_cli
import mariadb as mdb

INNODB_ONLY = ("row_search_mvcc", "ut_delay", "buf_page_get_gen", "btr_cur_search_to_nth_level", "srw_pause")


def _capture(server: mdb.MariaDB, load: mdb.SysbenchLoad, out: Path, *extra: str) -> dict:
    """A capture of ``server`` while ``load`` runs (stopped when the recording ends); its findings."""
    args = ("-p", str(server.pid), "-d", "5", "-F", "199", "--defaults-file", str(server.defaults_file), *extra)
    res = capture_under(load, out, *args)
    assert res.returncode == 0, res.stderr
    return json.loads((out / "findings.json").read_text())


@pytest.fixture(scope="module")
def loaded_run(mariadb, tmp_path_factory):
    need_perf()
    load = mdb.SysbenchLoad(mariadb, mdb.UNTIL_STOPPED, test="oltp_read_write", threads=8)
    try:
        load.connected()
        out = tmp_path_factory.mktemp("mdb") / "run"
        findings = _capture(mariadb, load, out)
    finally:
        load.stop()
    return out, findings


def test_server_facts_are_collected(loaded_run):
    out, _ = loaded_run
    facts = json.loads((out / "mysql.json").read_text())
    assert facts["reachable"] and facts["server"]["family"] == "mariadb"
    assert "innodb_spin_wait_delay" in facts["variables"] and facts["processlist"]["threads"] >= 1
    assert facts["my_cpu_relax_multiplier"] in (100, 200)


def test_server_layer_frames_are_named_and_innodb_is_unnamed_not_misnamed(loaded_run):
    out, findings = loaded_run
    frames = {
        f
        for line in (out / "stacks.folded").read_text().splitlines()
        if not line.startswith("#")
        for f in line.rsplit(" ", 1)[0].split(";")
    }
    assert {"do_command", "dispatch_command"} <= frames
    assert any(f.startswith("mysql_execute_command") for f in frames)
    assert any(f.startswith("[mariadbd+0x") for f in frames), "unnamed InnoDB code grouped by function"
    assert not [f for f in frames if f.startswith(INNODB_ONLY)], "a frame was given a name mariadbd does not have"
    assert "missing-symbols" in [f["rule"] for f in findings["findings"]]
    table = json.loads((out / "analysis.json").read_text())["unnamed"]
    ours = [row for row in table if row["binary"].endswith("/mariadbd")]
    assert ours and all(row["label"].startswith("[mariadbd+0x") and row["called_from"] for row in ours)


def test_the_servers_counters_are_kept_per_second_and_reported(loaded_run, mariadb, tmp_path):
    """status.json over perf's window, its key counters on the strip and in the report's section; a report of
    the run directory elsewhere (a copy, as another host would read it) shows the same."""
    out, findings = loaded_run
    status = json.loads((out / "status.json").read_text())
    run = json.loads((out / "run.json").read_text())
    assert status["pid"] == mariadb.pid and status["proof"] and len(status["polls"]) >= 4
    assert {"Com_select", "Questions", "Innodb_history_list_length"} <= set(status["values"])
    assert [s["when"] for s in status["innodb"]] == ["start", "end"]
    assert {o["source"] for o in status["own"]} == {"processlist", "status"}
    mine = next(s for s in run["sources"] if s["name"] == "status")
    assert mine["files"] == ["status.json"] and "status.Questions" in mine["series"] and not mine["why_not"]
    part = findings["profile"]["server_counters"]
    assert part["counters"]["Com_select"]["value"] > 10 and part["innodb"]["end"]["transactions"] is not None
    assert (
        'id="server-counters"' in (out / "report.html").read_text()
        and "### Server counters" in (out / "report.md").read_text()
    )
    shown = {r["name"] for r in _strip_series(out / "report.html")}
    assert {"status.Questions", "status.Threads_running", "status.history_length"} <= shown
    copy = tmp_path / "elsewhere"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("report.*", "findings.json", "flame.svg"))
    res = run_cli("report", str(copy), "-o", str(tmp_path / "again"), timeout=300)
    assert res.returncode == 0, res.stderr
    again = json.loads((tmp_path / "again" / "findings.json").read_text())["profile"]["server_counters"]
    assert again == part


def _strip_series(html: Path) -> list[dict]:
    import re

    data = re.search(r'<script type="application/json" id="pmuprof-data">(.*?)</script>', html.read_text(), re.S)
    return json.loads(data[1])["seconds"].get("series", [])


def test_no_password_in_any_output(loaded_run, mariadb):
    out, _ = loaded_run
    for name in ("run.json", "mysql.json", "status.json", "findings.json", "report.html", "report.md"):
        assert mariadb.password not in (out / name).read_text(errors="replace"), name


def test_raised_spin_delay_is_recorded_and_measured(mariadb, tmp_path):
    need_perf()
    mdb.sql(mariadb, "SET GLOBAL innodb_spin_wait_delay = 200")
    load = mdb.SysbenchLoad(mariadb, mdb.UNTIL_STOPPED, test="oltp_write_only", threads=16)
    try:
        load.connected()
        _capture(mariadb, load, tmp_path / "spin")
    finally:
        load.stop()
        mdb.sql(mariadb, "SET GLOBAL innodb_spin_wait_delay = 4")
    facts = json.loads((tmp_path / "spin" / "mysql.json").read_text())
    assert facts["variables"]["innodb_spin_wait_delay"] == "200"
    analysis = json.loads((tmp_path / "spin" / "analysis.json").read_text())
    assert analysis["skid"]["pause_share"] > 0, "skid-corrected PAUSE share is measured, not assumed"


def test_two_instances_side_by_side(mariadb, tmp_path):
    need_perf()
    second = mdb.start_mariadb()
    try:
        # paced: samples of the first instance, for a check of which target is which, not CPU load
        load = mdb.SysbenchLoad(mariadb, mdb.UNTIL_STOPPED, test="oltp_read_only", threads=4, rate=100)
        try:
            res = capture_under(
                load,
                str(tmp_path / "two"),
                "-p",
                str(mariadb.pid),
                "-p",
                str(second.pid),
                "-d",
                "4",
                "--no-mysql",
            )
        finally:
            load.stop()
    finally:
        mdb.stop_mariadb(second)
    assert res.returncode == 0, res.stderr
    run = json.loads((tmp_path / "two" / "run.json").read_text())
    labels = {t["label"] for t in run["targets"]}
    assert labels == {f"mariadbd-{mariadb.pid}", f"mariadbd-{second.pid}"}
    assert all("numa" in t and "cpus_allowed" in t for t in run["targets"])
    html = (tmp_path / "two" / "report.html").read_text()
    assert all(label in html for label in labels)


def test_unnamed_function_can_be_annotated_by_its_label(loaded_run):
    out, _ = loaded_run
    table = json.loads((out / "analysis.json").read_text())["unnamed"]
    label = next(r["label"] for r in table if r["binary"].endswith("/mariadbd") and r["self"])
    res = run_cli("annotate", str(out), "--symbol", label, "--json")
    assert res.returncode == 0, res.stderr
    model = json.loads(res.stdout)
    assert model["symbol"] == label and model["instructions"]
    raw = sum(i["raw"] for i in model["instructions"])
    assert raw > 0 and raw == sum(i["corrected"] for i in model["instructions"])
