"""Item 8 and the JSON cases of item 9: one damaged run never breaks history, report or retention."""

from __future__ import annotations

import json

import pytest

from .conftest import one_line

RUN = {"pmuprof_version": "0.2.0", "schema": 2, "started": "2026-01-0{n}T03:00:00Z", "duration_s": 5.0}
STACKS = "mysqld;do_command;ut_delay 70\nmysqld;do_command;row_search_mvcc 30\n"
FINDINGS = {
    "pmuprof_version": "0.2.0",
    "profile": {"samples": 100},
    "findings": [{"rule": "innodb-spin-wait", "severity": "warning", "title": "spin", "share": 0.7}],
}


def _run(base, name: str, n: int, run=None, findings=None):
    path = base / name
    path.mkdir(parents=True)
    (path / "run.json").write_text(
        run if isinstance(run, str) else json.dumps({**RUN, "started": RUN["started"].format(n=n)})
    )
    (path / "stacks.folded").write_text(STACKS)
    (path / "findings.json").write_text(findings if isinstance(findings, str) else json.dumps(findings or FINDINGS))
    return path


@pytest.fixture
def runs(tmp_path):
    base = tmp_path / "nightly"
    _run(base, "good", 1)
    _run(base, "truncated", 2, run=json.dumps(RUN)[:40])
    _run(
        base,
        "share-text",
        3,
        findings=json.dumps({**FINDINGS, "findings": [{**FINDINGS["findings"][0], "share": "lots"}]}),
    )
    _run(base, "nested-findings", 4, findings='{"findings": ' + "[" * 200_000 + "]" * 200_000 + "}")
    _run(base, "nested-run", 5, run="[" * 200_000)
    return base


def test_history_lists_damaged_runs_with_a_note(pmuprof, runs):
    res = pmuprof("history", runs)
    assert res.code == 0 and "Traceback" not in res.err, res.err
    assert "5 run(s)" in res.err
    html = (runs / "index.html").read_text()
    for name in ("truncated", "share-text", "nested-findings", "nested-run"):
        assert name in html
    assert "damaged" in html


def test_report_of_a_run_with_a_damaged_run_json_still_works(pmuprof, runs):
    res = pmuprof("report", runs / "nested-run", "--force")
    assert res.code == 0, res.err
    warnings = json.loads((runs / "nested-run" / "findings.json").read_text())["profile"]["warnings"]
    assert any("nested too deeply" in w for w in warnings)


def test_retention_counts_a_run_whose_run_json_is_damaged(pmuprof, runs):
    _run(runs, "newest", 9, run=json.dumps({**RUN, "started": "2099-01-01T00:00:00Z"}))
    res = pmuprof("schedule", "prune", "--dir", runs, "--keep-size", "1", "--dry-run")
    assert res.code == 0 and "would delete nested-run" in res.err and "would delete truncated" in res.err, res.err


def test_report_of_a_bare_damaged_json_is_one_line(pmuprof, tmp_path):
    bad = tmp_path / "run"
    bad.mkdir()
    (bad / "run.json").write_text("[" * 200_000)
    one_line(pmuprof("report", bad), 3, "no stacks.folded and no perf.data")


@pytest.mark.parametrize("share", ['"lots"', "NaN", "-0.5", "7", "true", '{"v": 1}'])
def test_history_leaves_out_a_damaged_share_with_a_warning(pmuprof, tmp_path, share):
    base = tmp_path / "nightly"
    for n in (1, 2, 3):
        _run(base, f"good{n}", n)
    bad = json.dumps(FINDINGS).replace('"share": 0.7', f'"share": {share}')
    _run(base, "damaged", 4, findings=bad)
    res = pmuprof("history", base, "--json")
    assert res.code == 0 and "Traceback" not in res.err, res.err
    doc = json.loads(res.out)
    # never read as 0: no trend line (improved or regressed) comes from the damaged run
    assert not [f for f in doc["regressions"] if f["run"] == "damaged"]
    res = pmuprof("history", base)
    assert "improved" not in res.err, res.err
    warned = [line for line in res.err.splitlines() if "warning" in line and "damaged" in line]
    needle = "NaN is not a JSON number" if share == "NaN" else "innodb-spin-wait"  # the file, or the finding
    assert len(warned) == 1 and needle in warned[0] and "left out" in warned[0], res.err


def _run_with_samples(path):
    """A run directory with samples.tsv (thread ids), which the processlist joins."""
    from pmuprof.model.folded import write_folded
    from pmuprof.model.samples import from_keyed, write_tsv
    from pmuprof.model.stacks import Stacks
    import io

    _run(path.parent, path.name, 1)
    scan = ("mysqld", "do_command", "row_search_mvcc")
    stacks = Stacks.of({scan: 100})
    with open(path / "stacks.folded", "w") as out:
        order = write_folded(out, stacks)
    text = io.StringIO()
    write_tsv(text, from_keyed(stacks, {(scan, 11, 100): 60, (scan, 12, 100): 40}), order)
    (path / "samples.tsv").write_text(text.getvalue())
    return path


PLIST_HEAD = "# pmuprof processlist: second\ttid\tid\tuser\tdb\tcommand\tstate\ttime\tdigest\n"


def test_a_damaged_processlist_is_a_warning_line(pmuprof, tmp_path):
    run = _run_with_samples(tmp_path / "run")
    (run / "processlist.tsv").write_bytes(
        (
            PLIST_HEAD + "100\t11\t1\tapp\tshop\tQuery\tstatistics\t0\tSELECT ?\n"
            "100\t12\t2\tapp\tsh\x00\xff garbage\n100\t1"
        ).encode("latin-1")
    )
    res = pmuprof("report", run, "--force")
    assert res.code == 0 and "Traceback" not in res.err, res.err
    warned = [line for line in res.err.splitlines() if "warning:" in line and "processlist.tsv" in line]
    assert len(warned) == 1 and "2 line(s)" in warned[0] and "line 3" in warned[0], res.err
    warnings = json.loads((run / "findings.json").read_text())["profile"]["warnings"]
    assert any("processlist.tsv" in w for w in warnings)
    assert "processlist.tsv" in (run / "report.md").read_text()


def test_a_sound_processlist_gives_no_warning(pmuprof, tmp_path):
    run = _run_with_samples(tmp_path / "run")
    (run / "processlist.tsv").write_text(PLIST_HEAD + "100\t11\t1\tapp\tshop\tQuery\tstatistics\t0\tSELECT ?\n\n")
    res = pmuprof("report", run, "--force")
    assert res.code == 0 and "warning" not in res.err, res.err


def test_offcpu_output_of_a_killed_capture_is_a_warning_line(pmuprof, tmp_path):
    run = _run(tmp_path, "run", 1)
    (run / "offcpu.out").write_bytes(b"pmuprof-offcpu 3\n" + b"\x01" * 4096)  # what the tracer left, never folded
    res = pmuprof("report", run, "--force")
    assert res.code == 0 and "Traceback" not in res.err, res.err
    warned = [line for line in res.err.splitlines() if "warning:" in line and "offcpu.out" in line]
    assert len(warned) == 1 and "left out" in warned[0], res.err
    assert any("offcpu.out" in w for w in json.loads((run / "findings.json").read_text())["profile"]["warnings"])


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_in_run_json_is_a_warning_not_an_internal_error(pmuprof, tmp_path, constant):
    run = _run(tmp_path, "run", 1, run=json.dumps(RUN).replace('"duration_s": 5.0', f'"duration_s": {constant}'))
    res = pmuprof("report", run, "--force")
    assert res.code == 0 and "internal error" not in res.err, res.err
    warned = [line for line in res.err.splitlines() if "warning:" in line and "run.json" in line]
    assert len(warned) == 1 and f"{constant} is not a JSON number" in warned[0], res.err
    res = pmuprof("history", tmp_path)
    assert res.code == 0 and "internal error" not in res.err and "warning: run: damaged" in res.err, res.err


@pytest.mark.parametrize(
    "field, value, why",
    [
        ("command", '["pmuprof", "\\ud800"]', "a lone UTF-16 surrogate"),
        ("duration_s", "1e999", "1e999 is out of range for a number"),
        ("hostname", '"\\udfff\\ud800"', "a lone UTF-16 surrogate"),
    ],
)
def test_a_lone_surrogate_or_an_infinite_number_is_a_warning_not_an_internal_error(
    pmuprof, tmp_path, field, value, why
):
    """JSON can spell what no pmuprof file holds: a lone surrogate (no UTF-8 writer can encode it) and a
    number past a float's range (Python reads it as inf): run.json is damaged, left out with a warning."""
    text = json.dumps({**RUN, "started": "2026-01-01T03:00:00Z"})[:-1] + f', "{field}": {value}}}'
    run = _run(tmp_path, "run", 1, run=text)
    res = pmuprof("report", run, "--force")
    assert res.code == 0 and "internal error" not in res.err, res.err
    warned = [line for line in res.err.splitlines() if "warning:" in line and "run.json" in line]
    assert len(warned) == 1 and why in warned[0], res.err
    assert (run / "report.md").read_text(encoding="utf-8")
    res = pmuprof("history", tmp_path)
    assert res.code == 0 and "internal error" not in res.err and "warning: run: damaged" in res.err, res.err
