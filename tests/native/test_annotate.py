"""pmuprof annotate on a run directory (real compiled binary, hand-written leaves) and the skid models."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from native_support import PROGS, REPO, compile_prog, containing_function, elf_symbols, helper_binary, need_features


@pytest.fixture(scope="module")
def rundir(tmp_path_factory):
    helper = helper_binary()
    need_features(helper, "elfutils", "capstone")
    tmp = tmp_path_factory.mktemp("annot")
    exe = compile_prog(PROGS / "placements.c", tmp / "pl", "gcc", "-O2")
    syms = elf_symbols(exe)
    run = tmp / "run"
    run.mkdir()
    func, start = containing_function(syms, syms["lp_after"][0])
    after = syms["lp_after"][0] - start
    (run / "run.json").write_text(
        json.dumps({"targets": [{"pid": 1, "label": "pl", "exe": str(exe), "build_id": "00ff"}]})
    )
    (run / "stacks.folded").write_text("pl;main;loop_pause 95\npl;main;fences 5\n")
    fence_after = syms["mf_after"][0] - syms["fences"][0]
    (run / "leaves.tsv").write_text(
        f"90\t{exe}\tloop_pause\t{after:x}\n5\t{exe}\tloop_pause\t0\n5\t{exe}\tfences\t{fence_after:x}\n"
    )
    return run, exe, helper


def _cli(*args, helper):
    env = {"PYTHONPATH": str(REPO), "PMUPROF_HELPER": str(helper), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "pmuprof", "annotate", *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_annotate_refuses_a_binary_whose_build_id_differs(rundir):
    run, exe, helper = rundir
    res = _cli(str(run), "--symbol", "loop_pause", "--json", helper=helper)
    assert res.returncode == 3 and res.stderr.count("\n") == 1, res.stderr
    assert "not the 00ff that was recorded" in res.stderr and "--binary" in res.stderr


def test_annotate_json(rundir):
    run, exe, helper = rundir
    res = _cli(str(run), "--symbol", "loop_pause", "--json", "--binary", str(exe), helper=helper)
    assert res.returncode == 0, res.stderr
    model = json.loads(res.stdout)
    assert model["symbol"] == "loop_pause" and model["binary"] == str(exe)
    insns = model["instructions"]
    assert {"address", "offset", "text", "raw", "corrected"} <= set(insns[0])
    assert sum(i["raw"] for i in insns) == sum(i["corrected"] for i in insns) == 95
    pause = [i for i in insns if i["text"] == "pause"][0]
    assert pause["raw"] == 0 and pause["corrected"] == 90
    assert any("build-id" in w for w in model["warnings"]), "run.json's build-id differs on purpose"


def test_annotate_text_and_errors(rundir):
    run, exe, helper = rundir
    res = _cli(str(run), "--symbol", "loop_pause", "--binary", str(exe), helper=helper)
    assert res.returncode == 0 and "moved from the instruction(s) after it" in res.stdout
    res = _cli(str(run), "--symbol", "no_such_function", "--binary", str(exe), helper=helper)
    assert res.returncode == 3 and res.stderr.count("\n") == 1 and "symbol not found" in res.stderr


def test_hotspots_and_shares(rundir, monkeypatch):
    from dataclasses import replace

    from pmuprof.analysis import skid
    from pmuprof.model.analysis import Analysis, Binary
    from pmuprof.model.rundir import load_run_dir
    from pmuprof.report.payload import hotspots
    from pmuprof.tools.native import helper as pyhelper

    run, exe, helper = rundir
    monkeypatch.setenv("PMUPROF_HELPER", str(helper))
    profile = load_run_dir(run)
    functions = skid.correct(profile.leaves, (Binary(path=str(exe), file=str(exe)),), pyhelper.skid)
    summary = skid.summary(functions, profile.total)
    assert summary.pause_share == 0.9 and summary.fence_share == 0.05 and summary.moved == 95
    profile = replace(profile, analysis=Analysis(skid_functions=functions, skid=summary))
    top = hotspots(profile)[0]
    assert top["symbol"] == "loop_pause" and top["share"] == 0.95
    pause = next(i for i in top["instructions"] if i["text"] == "pause")
    assert pause["moved_in"] == 90 and pause["corrected"] == 90
