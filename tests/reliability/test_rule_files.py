"""Items 2, 3, 6: a hostile rule file or frame name costs bounded memory and time; rule errors show
before anything is recorded."""

from __future__ import annotations

import os
import resource
import time

import pytest


from .conftest import one_line
from helpers import REPO

from pmuprof.findings.globs import MAX_MATCH_CHARS
from pmuprof.findings.patterns import LOCK_WRAPPERS, WAIT_LEAVES, PatternSet

BASE_RULE = (REPO / "rules" / "malloc-contention.yaml").read_text()
PATTERN_LINE = 8  # `      self: [...]` of the glibc evidence


def rule(rule_id: str, pattern: str) -> str:
    """A valid built-in rule with its id and first stack pattern replaced."""
    lines = BASE_RULE.replace("id: malloc-contention", f"id: {rule_id}", 1).splitlines(True)
    assert lines[PATTERN_LINE - 1].lstrip().startswith("self:")
    lines[PATTERN_LINE - 1] = f"      self: [{pattern}]\n"
    return "".join(lines)


def _rules_dir(tmp_path, files: dict[str, str]):
    folder = tmp_path / "rules"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def _laughs(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels + 1)]
    return "id: laughs\n" + "\n".join(lines) + "\n"


def test_alias_bomb_self_alias_and_deep_nesting_are_file_line_errors(pmuprof, tmp_path):
    folder = _rules_dir(
        tmp_path,
        {
            "laughs.yaml": _laughs(),
            "self.yaml": "id: self\na: &a [*a]\n",
            "deep.yaml": "id: deep\nx: " + "[" * 5000 + "]" * 5000 + "\n",
            "long.yaml": "id: long\nx: " + "9" * 6000 + "\n",
        },
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.process_time()  # in this process: the check's CPU time, whatever else the host runs
    res = pmuprof("rules", "check", folder)
    assert time.process_time() - t0 < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB: no expansion
    assert res.code == 7 and "Traceback" not in res.err
    for needle in (
        "laughs.yaml:3: YAML alias *a0",
        "self.yaml:2: YAML alias *a",
        "deep.yaml:2: nested more than",
        "long.yaml:2: value cannot be read",
    ):
        assert needle in res.err, res.err


def test_catastrophic_regex_is_refused_with_file_and_line(pmuprof, tmp_path):
    folder = _rules_dir(
        tmp_path,
        {
            "slow.yaml": rule("slow", '"re:^(a+)+$"'),
            "backref.yaml": rule("backref", '"re:(a)\\\\1"'),
            "poly.yaml": rule("poly", '"re:a.*b.*c"'),
            "fine.yaml": rule("fine", '"re:^\\\\[[^\\\\]]+\\\\]$"'),
        },
    )
    res = pmuprof("rules", "check", folder)
    assert res.code == 7, res.err
    assert "slow.yaml:8: bad regex in stack.self: a repeat of a repeat" in res.err
    assert "backref.yaml:8: bad regex in stack.self: backreferences" in res.err
    assert "poly.yaml:8: bad regex in stack.self: 2 unbounded repeats" in res.err
    assert "1 valid, 3 invalid" in res.out


def test_huge_hostile_frame_names_match_in_bounded_time():
    patterns = PatternSet.of(LOCK_WRAPPERS + WAIT_LEAVES + ("re:^\\[[^\\]]+ pause\\]$",))
    names = ["Mutex<" * 50_000 + "::", "a" * 300_000 + "!", "*::" * 100_000, "[" + "x" * 300_000]
    t0 = time.process_time()  # the matching's CPU time: what it costs, whatever else the host runs
    for name in names:
        patterns.matches(name)
    assert time.process_time() - t0 < 1.0
    assert PatternSet.of(["*::wait_and_lock*"]).matches("x" * (MAX_MATCH_CHARS - 40) + "::wait_and_lock(int)")


def test_bad_pmuprof_rules_stops_capture_before_recording(pmuprof, tmp_path):
    folder = _rules_dir(tmp_path, {"slow.yaml": rule("slow", '"re:^(a+)+$"')})
    out = tmp_path / "run"
    t0 = time.monotonic()
    for command in ("capture", "record"):
        res = pmuprof(
            command, "-p", os.getpid(), "--no-mysql", "-d", "30", "-o", out, env={"PMUPROF_RULES": str(folder)}
        )
        one_line(res, 7, "slow.yaml:8")
    assert time.monotonic() - t0 < 50 and not out.exists(), "nothing may be recorded"  # two 30 s windows would be 60


def test_bad_pmuprof_rules_stops_watch_before_polling(pmuprof, tmp_path):
    folder = _rules_dir(tmp_path, {"slow.yaml": rule("slow", '"re:^(a+)+$"')})
    res = pmuprof(
        "watch",
        "-p",
        os.getpid(),
        "--trigger",
        "cpu>1",
        "--no-mysql",
        "-o",
        tmp_path / "w",
        env={"PMUPROF_RULES": str(folder)},
    )
    one_line(res, 7, "slow.yaml:8")


def test_built_in_rules_still_load(pmuprof):
    res = pmuprof("rules", "check", REPO / "rules")
    assert res.code == 0 and "0 invalid" in res.out, res.err  # a negative lookahead and classes pass the check


def _copy_rules(tmp_path, knowledge: dict[str, str | None]):
    """The built-in rule files in a folder of their own; ``knowledge``: file -> text (None: left out)."""
    folder = _rules_dir(tmp_path, {p.name: p.read_text() for p in (REPO / "rules").glob("*.yaml")})
    (folder / "knowledge").mkdir()
    for name in ("latches.yaml", "server-features.yaml"):
        text = knowledge.get(name, (REPO / "rules" / "knowledge" / name).read_text())
        if text is not None:
            (folder / "knowledge" / name).write_text(text)
    return folder


@pytest.mark.parametrize(
    "name, text, needle",
    [
        ("latches.yaml", None, "latches.yaml: cannot read"),
        ("server-features.yaml", None, "server-features.yaml: cannot read"),
        ("latches.yaml", "sources: []\nwait_frames: [\n", "latches.yaml:"),
    ],
)
def test_rules_check_checks_the_knowledge_a_capture_loads(pmuprof, tmp_path, name, text, needle):
    folder = _copy_rules(tmp_path, {name: text})
    res = pmuprof("rules", "check", folder)
    assert res.code == 7 and needle in res.err, res.err
    out = tmp_path / "run"
    res = pmuprof("capture", "-p", os.getpid(), "--no-mysql", "-d", "30", "-o", out, env={"PMUPROF_RULES": str(folder)})
    one_line(res, 7, name)
    assert not out.exists(), "nothing may be recorded"


def test_rules_check_checks_the_rule_set_as_a_whole(pmuprof, tmp_path):
    folder = _copy_rules(tmp_path, {})
    (folder / "sync-array.yaml").unlink()  # other rules explain it
    res = pmuprof("rules", "check", folder)
    assert res.code == 7 and "explains unknown rule 'sync-array'" in res.err, res.err


def test_a_complete_copy_of_the_rules_passes(pmuprof, tmp_path):
    res = pmuprof("rules", "check", _copy_rules(tmp_path, {}))
    assert res.code == 0 and "0 invalid" in res.out, res.err


def test_rules_check_reads_latch_ids_from_the_folder_it_checks(pmuprof, tmp_path):
    """A rule naming a latch its own folder's table lacks fails `rules check DIR`, as it fails a capture
    with PMUPROF_RULES=DIR, whatever latch table the rules in use have."""
    table = (REPO / "rules" / "knowledge" / "latches.yaml").read_text()
    assert table.count("- id: ahi_latch\n") == 1
    folder = _copy_rules(tmp_path, {"latches.yaml": table.replace("- id: ahi_latch\n", "- id: ahi_latch_renamed\n")})
    res = pmuprof("rules", "check", folder)
    assert res.code == 7 and "adaptive-hash-index.yaml:9: unknown latch id(s) ahi_latch" in res.err, res.err
    res = pmuprof(
        "capture",
        "-p",
        os.getpid(),
        "--no-mysql",
        "-d",
        "30",
        "-o",
        tmp_path / "run",
        env={"PMUPROF_RULES": str(folder)},
    )
    one_line(res, 7, "adaptive-hash-index.yaml:9")
