"""docs/internals.md's recipes ("**A new X touches N files:**" and a numbered list of files) stay true: each
is followed, step by step, in a copy of the checkout. The files the recipe names are written or edited,
the generated docs regenerated with the commands it gives; then the new thing works, and exactly the files
the recipe lists differ from the checkout (issue 36 item 4)."""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import REPO

INTERNALS = REPO / "docs" / "internals.md"
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
HEADING = re.compile(r"^\*\*A new (?P<what>.+?) touches (?P<n>\w+) files?(?P<rest>[^*]*):\*\*$", re.M)
PATH = re.compile(r"`([\w.<>\-]+(?:/[\w.<>\-]+)+)`")


def recipes() -> dict[str, tuple[int, list[list[str]]]]:
    """what -> (the count its heading says, the files each numbered step names)."""
    text = INTERNALS.read_text(encoding="utf-8")
    found = {}
    for m in HEADING.finditer(text):
        steps, body = [], text[m.end() :].lstrip("\n")
        for item in re.split(r"\n(?=\d+\. )", body.split("\n\n", 1)[0]):
            if re.match(r"\d+\. ", item):
                steps.append(PATH.findall(item.split("`: ", 1)[0] + "`:"))
        found[m.group("what")] = (NUMBERS.get(m.group("n"), -1), steps)
    return found


def _pattern(path: str) -> re.Pattern[str]:
    """A recipe's path, `<name>` standing for any one path component part and `...` for any folders."""
    parts = re.split(r"(<[^>]+>|\.\.\.)", path)
    return re.compile(
        "".join("[^/]+" if p.startswith("<") else ".*" if p == "..." else re.escape(p) for p in parts) + "$"
    )


def _copy(tmp: Path, *trees: str) -> Path:
    root = tmp / "checkout"
    for tree in trees:
        src = REPO / tree
        ignore = shutil.ignore_patterns("__pycache__", "build", "build-san", "*.pyc")
        shutil.copytree(src, root / tree, ignore=ignore) if src.is_dir() else shutil.copy2(src, root / tree)
    return root


def _changed(root: Path, *trees: str) -> set[str]:
    """Files of the copy that differ from the checkout's, or are new there."""
    out = set()
    for tree in trees:
        for path in (root / tree).rglob("*"):
            rel = path.relative_to(root)
            if path.is_file() and "__pycache__" not in rel.parts and rel.parts[1:2] not in (("build",), ("build-san",)):
                same = (REPO / rel).is_file() and filecmp.cmp(path, REPO / rel, shallow=False)
                out |= set() if same else {str(rel)}
    return out


def _pmuprof(
    root: Path, *args: str, out: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root), "PMUPROF_RULES": str(root / "rules"), **(env or {})}
    res = subprocess.run(
        [sys.executable, "-m", "pmuprof", *args], cwd=root, capture_output=True, text=True, env=env, timeout=300
    )
    assert res.returncode == 0, res.stderr[-2000:]
    if out is not None:
        out.write_text(res.stdout, encoding="utf-8")
    return res


def _insert_after(path: Path, anchor: str, line: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(anchor) == 1, anchor
    path.write_text(text.replace(anchor, anchor + line), encoding="utf-8")


KIND = '''\
"""The ``distinct_leaves`` kind: how many different leaf frames the samples end in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..evidence import Evidence
from .base import Env, Kind, SpecCtx


@dataclass(frozen=True, eq=False)
class Leaves(Evidence):
    value: int
    wanted: int

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "min": self.wanted}


class DistinctLeaves(Kind):
    name = "distinct_leaves"
    guide = "`distinct_leaves` (distinct leaf frames, at least N)"
    about = "distinct leaf frames, at least {}"

    def validate(self, ctx: SpecCtx, spec: Any, line: int) -> Any:
        if not isinstance(spec, int) or spec < 1:
            raise ctx.fail(line, "distinct_leaves is a positive count")
        return spec

    def evaluate(self, matcher: Any, env: Env) -> Any:
        return Leaves(len({stack[-1] for stack in env.index.st.keys()}), matcher.spec)

    def doc(self, spec: Any) -> str:
        return f"distinct leaf frames (at least {spec})"

    def subject(self, spec: Any) -> str:
        return str(spec)

    def words(self, item: Any, value: Any) -> str:
        return f"{value['value']} leaf frames"
'''

KIND_RULE = """\
id: many-leaves
title: Many distinct leaf frames
severity: warning
evidence:
  leaves:
    distinct_leaves: 2
thresholds: {metric: leaves, warning: 2}
message: "{leaves} leaves ({leaves.min} wanted)"
doc: {symptom: s, why: w, fix: f, caveats: c}
"""


def follow_matcher_kind(root: Path, tmp: Path) -> None:
    kinds = root / "pmuprof" / "findings" / "kinds"
    (kinds / "distinct_leaves.py").write_text(KIND, encoding="utf-8")  # 1. the module
    _insert_after(
        kinds / "__init__.py", "from .derived import Derived\n", "from .distinct_leaves import DistinctLeaves\n"
    )
    _insert_after(kinds / "__init__.py", "        Fence(),\n", "        DistinctLeaves(),\n")  # 2. one KINDS entry
    _pmuprof(root, "rules", "doc", out=root / "docs" / "rules.md")  # 3. regenerated
    assert "`distinct_leaves` (distinct leaf frames, at least N)" in (root / "docs" / "rules.md").read_text()
    rules = tmp / "rules"  # what it is for: a rule using it fires, with its evidence and words
    shutil.copytree(root / "rules" / "knowledge", rules / "knowledge")
    (rules / "many-leaves.yaml").write_text(KIND_RULE, encoding="utf-8")
    folded = tmp / "in.folded"
    folded.write_text("mysqld;do_command;a 300\nmysqld;do_command;b 300\nmysqld;c 300\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(root), "PMUPROF_RULES": str(rules)}
    res = subprocess.run(
        [sys.executable, "-m", "pmuprof", "report", str(folded), "--json"],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert '"message": "3 leaves (2 wanted)"' in res.stdout and '"min": 2' in res.stdout


FORMAT = '''\
"""Counts first: one `COUNT stack` line per stack, for tools that sort by the first column."""

from __future__ import annotations

from ..model.profile import Profile


def count_first(profile: Profile) -> bytes:
    """Profile -> bytes: the same profile gives the same bytes."""
    return "".join(f"{n} {';'.join(s)}\\n" for s, n in sorted(profile.stacks.items())).encode()
'''


def follow_export_format(root: Path, tmp: Path) -> None:
    report = root / "pmuprof" / "report"
    (report / "countfirst.py").write_text(FORMAT, encoding="utf-8")  # 1. the writer
    export = report / "export.py"
    _insert_after(export, "from .facts import event_names\n", "from .countfirst import count_first\n")
    _insert_after(  # 2. one FORMATS entry
        export,
        "        threads=True,\n    ),\n",
        '    "count-first": Format("counts before stacks", lambda p, ask: count_first(p)),\n',
    )
    _pmuprof(root, "man", "--markdown", out=root / "docs" / "cli.md")  # 3. regenerated
    _pmuprof(root, "man", out=root / "docs" / "pmuprof.1")
    assert "count-first: counts before stacks" in (root / "docs" / "cli.md").read_text()
    folded, out = tmp / "in.folded", tmp / "out.txt"
    folded.write_text("mariadbd;do_command;ut_delay 7\nmariadbd;do_command 3\n", encoding="utf-8")
    _pmuprof(root, "export", str(folded), "-f", "count-first", "-o", str(out))
    assert out.read_text() == "3 mariadbd;do_command\n7 mariadbd;do_command;ut_delay\n"


def follow_native_code(root: Path, tmp: Path) -> None:
    if not shutil.which("make") or not shutil.which("gcc"):
        pytest.skip("make/gcc not installed (apt-get install build-essential)")
    lib = root / "native" / "lib"
    (lib / "probe.c").write_text(  # 1. the code
        '/* probe.c - a test of the recipe. */\n#include "probe.h"\n\nint probe_answer(void)\n{\n    return 42;\n}\n'
    )
    (lib / "probe.h").write_text("/* probe.h - a test of the recipe. */\nint probe_answer(void);\n")  # 2.
    _insert_after(  # 3. a program's file includes it and calls it
        root / "native" / "fold" / "main.c", '#include "lib/fold.h"\n', '#include "lib/probe.h"\n'
    )
    _insert_after(
        root / "native" / "fold" / "main.c",
        "int main(int argc, char **argv)\n{\n",
        '    if (getenv("PMUPROF_RECIPE_PROBE"))\n        return probe_answer();\n',
    )
    build = tmp / "build"
    made = subprocess.run(
        ["make", "-C", str(root / "native"), f"BUILD={build}", f"{build}/pmuprof-fold"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert made.returncode == 0, made.stderr[-2000:]
    members = subprocess.run(["ar", "t", str(build / "libpmuprof.a")], capture_output=True, text=True).stdout
    assert "probe.o" in members.split()
    ran = subprocess.run([str(build / "pmuprof-fold")], env={**os.environ, "PMUPROF_RECIPE_PROBE": "1"}, input="")
    assert ran.returncode == 42


SOURCE = '''\
"""The first target's resident memory, once a second (a test of the recipe)."""

from __future__ import annotations

from pathlib import Path

from ..lifecycle import Context
from ..persecond import Measure, PerSecond


class TargetRss(PerSecond):
    name = "target"
    measures = (Measure("target.rss", "bytes", "the first target's resident memory (VmRSS)", show=True),)

    def __init__(self, pid: int) -> None:
        super().__init__()
        self.path = Path(f"/proc/{pid}/status")

    @classmethod
    def of(cls, ctx: Context) -> TargetRss:
        return cls(ctx.pids[0])

    def read(self) -> str:
        return self.path.read_text()

    def keep(self, second: int, reading: str) -> dict[str, float | None]:
        kib = next((line.split()[1] for line in reading.splitlines() if line.startswith("VmRSS:")), None)
        return {"target.rss": None if kib is None else float(kib) * 1024}
'''

SOURCE_RULE = """\
id: target-memory
title: The target holds memory
severity: warning
evidence:
  rss:
    series: target.rss
thresholds: {metric: rss, warning: 1048576}
message: "resident {rss.summary}"
doc: {symptom: s, why: w, fix: f, caveats: c}
"""


def _source_fixture(where: Path, mib: float) -> None:
    """NAME.folded (the stacks) and NAME.json (its facts: here its series.json) of a rule fixture."""
    series = {"name": "target.rss", "source": "target", "unit": "bytes", "first": 0, "values": [mib * 2**20] * 5}
    where.with_suffix(".folded").write_text("mysqld;do_command 100\n", encoding="utf-8")
    where.with_suffix(".json").write_text(json.dumps({"series": {"series": [series]}}), encoding="utf-8")


def follow_capture_source(root: Path, tmp: Path) -> None:
    from helpers import FAKE_PERF

    (root / "pmuprof" / "capture" / "proc" / "targetrss.py").write_text(SOURCE, encoding="utf-8")  # 1.
    sources = root / "pmuprof" / "capture" / "sources.py"  # 2. its import and its line in SOURCES
    _insert_after(sources, "from .proc.hostload import HostLoad\n", "from .proc.targetrss import TargetRss\n")
    _insert_after(sources, "    HostLoad.of,", "\n    TargetRss.of,  # the first target's resident memory")
    _insert_after(  # 3. its row in the series table
        root / "docs" / "internals.md",
        "| series | unit | source | shown | what |\n|---|---|---|---|---|\n",
        "| `target.rss` | bytes | target | yes | the first target's resident memory |\n",
    )
    (root / "rules" / "target-memory.yaml").write_text(SOURCE_RULE, encoding="utf-8")  # 4.
    fixtures = root / "tests" / "rules" / "fixtures" / "target-memory"  # 5.
    fixtures.mkdir(parents=True)
    _source_fixture(fixtures / "fire-big", 64)
    _source_fixture(fixtures / "quiet-small", 0.5)
    env = {**os.environ, "PYTHONPATH": str(root)}
    cases = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/rules/test_fixtures.py",
            "-k",
            "target-memory",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert cases.returncode == 0 and "2 passed" in cases.stdout, cases.stdout[-3000:]
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    out = tmp / "run"
    try:
        argv = ["capture", "-p", str(sleeper.pid), "-d", "3", "--no-mysql", "--no-off-cpu", "-q", "-o", str(out)]
        _pmuprof(root, *argv, env=FAKE_PERF)
    finally:
        sleeper.kill()
        sleeper.wait()
    run = json.loads((out / "run.json").read_text())
    assert {"name": "target", "files": [], "series": ["target.rss"], "why_not": ""} in run["sources"]
    kept = {s["name"]: s for s in json.loads((out / "series.json").read_text())["series"]}
    assert len(kept["target.rss"]["values"]) >= 3
    data = json.loads(re.search(r'id="pmuprof-data">(.*?)</script>', (out / "report.html").read_text(), re.S)[1])
    assert "target.rss" in {r["name"] for r in data["seconds"]["series"]}
    findings = json.loads((out / "findings.json").read_text())["findings"]
    assert any(f["rule"] == "target-memory" and f["evidence"]["rss"]["unit"] == "bytes" for f in findings)


FOLLOWERS: dict[str, tuple[Callable[[Path, Path], None], tuple[str, ...]]] = {
    "matcher kind": (follow_matcher_kind, ("pmuprof", "rules", "templates", "docs")),
    "export format": (follow_export_format, ("pmuprof", "rules", "templates", "docs")),
    "piece of native code the programs share": (follow_native_code, ("native",)),
    "per-second source shown in the report and read by rules": (
        follow_capture_source,
        ("pmuprof", "rules", "templates", "docs", "tests"),
    ),
}
# Recipes whose follower belongs to work in progress; an entry here says whose, and goes when it lands.
PENDING: dict[str, str] = {}


def test_every_recipe_has_a_follower_and_counts_its_steps():
    found = recipes()
    assert set(found) == set(FOLLOWERS) | set(PENDING), "a recipe in docs/internals.md without a follower here"
    for what, (count, steps) in found.items():
        assert count == len(steps) and all(steps), (what, count, steps)


@pytest.mark.parametrize("what", sorted(FOLLOWERS))
def test_following_the_recipe_changes_exactly_its_files(what: str, tmp_path: Path) -> None:
    follow, trees = FOLLOWERS[what]
    _count, steps = recipes()[what]
    root = _copy(tmp_path, *trees)
    follow(root, tmp_path)
    changed = _changed(root, *trees)
    patterns = [_pattern(path) for step in steps for path in step]
    assert all(any(p.match(f) for p in patterns) for f in changed), (sorted(changed), steps)
    assert all(any(p.match(f) for f in changed) for p in patterns), (sorted(changed), steps)


def test_the_recipe_reader_reads_what_the_doc_says():
    """The reader itself, on a recipe written here: heading count, steps, placeholders."""
    doc = textwrap.dedent("""\
        **A new thing touches two files:**

        1. `pmuprof/x/<thing>.py`: the code, with `Thing` and `--flag`;
        2. `docs/a.md` and `docs/b.1`: regenerated (`pmuprof man > docs/b.1`).

        Text after.
    """)
    m = HEADING.search(doc)
    assert m and m.group("what") == "thing" and NUMBERS[m.group("n")] == 2
    assert PATH.findall("1. `pmuprof/x/<thing>.py`: the code, with `Thing` and `--flag`;") == ["pmuprof/x/<thing>.py"]
    assert _pattern("pmuprof/x/<thing>.py").match("pmuprof/x/new.py") and not _pattern("pmuprof/x/<thing>.py").match(
        "pmuprof/x/y/new.py"
    )
    assert _pattern("pmuprof/capture/.../<source>.py").match("pmuprof/capture/a/b/io.py")
