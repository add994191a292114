"""Binaries are told apart by path and build-id and by the process that mapped them, never by file name.

Two processes running different builds named ``mariadbd`` (issue 23): each one's unnamed code is cut by
its own binary, skid correction reads each binary's own leaves, and ``--binary`` / annotate pick the
binary by build-id.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pmuprof.analysis import annotate as annot, binaries as binmod, skid, unnamed
from pmuprof.model.analysis import Analysis, Binary, UnnamedFunction
from pmuprof.model.profile import Leaf, Profile
from pmuprof.model.run import Run, Target
from pmuprof.model.stacks import Stacks

OLD = Binary(path="/usr/sbin/mariadbd", build_id="aa", file="/usr/sbin/mariadbd", file_build_id="aa", samples=90)
NEW = Binary(path="/opt/m11/bin/mariadbd", build_id="bb", file="/opt/m11/bin/mariadbd", file_build_id="bb", samples=10)
LIBC = Binary(path="/lib/libc.so.6", build_id="cc", file="/lib/libc.so.6", file_build_id="cc", samples=5)
MAPPED = {
    "mariadbd-1": binmod.Mapped(frozenset({OLD.path, LIBC.path}), OLD.path, "aa"),
    "mariadbd-2": binmod.Mapped(frozenset({NEW.path, LIBC.path}), NEW.path, "bb"),
}


def fake_funcs(calls: list):
    """The helper's ``funcs``: in the old build 0x100 is in a PAUSE function at 0xf0, in the new one in a
    plain function at 0x80."""

    def funcs(file, vaddrs, debug=None):
        calls.append((file, tuple(vaddrs)))
        start, pause = ("0xf0", True) if file == OLD.file else ("0x80", False)
        return {
            "build_id": "aa" if file == OLD.file else "bb",
            "addresses": [{"input": hex(v), "start": start, "end": "0x200", "contains_pause": pause} for v in vaddrs],
        }

    return funcs


def test_each_process_gets_the_binary_it_mapped():
    per_root, unclear = binmod.owners((OLD, NEW, LIBC), MAPPED)
    assert per_root["mariadbd-1"]["mariadbd"] is OLD and per_root["mariadbd-2"]["mariadbd"] is NEW
    assert per_root["mariadbd-1"]["libc.so.6"] is LIBC
    assert "mariadbd" in unclear and "mariadbd" not in per_root[""]  # no mapping recorded: no guess


def test_without_mappings_the_binary_with_samples_is_the_one():
    idle = Binary(path=NEW.path, build_id="bb", file=NEW.file, file_build_id="bb", samples=0)
    per_root, unclear = binmod.owners((OLD, idle), {})
    assert per_root[""]["mariadbd"] is OLD and not unclear


def test_shared_raw_frame_is_cut_by_each_process_binary():
    stacks = Stacks.of({("mariadbd-1", "main", "[mariadbd@0x100]"): 7, ("mariadbd-2", "main", "[mariadbd@0x100]"): 3})
    calls: list = []
    out, rows, table, reason, lines = unnamed.group_rows(stacks, (OLD, NEW, LIBC), fake_funcs(calls), MAPPED)
    assert reason is None and not lines
    assert dict(out.items()) == {
        ("mariadbd-1", "main", "[mariadbd+0xf0 pause]"): 7,
        ("mariadbd-2", "main", "[mariadbd+0x80]"): 3,
    }
    assert sorted(calls) == [(NEW.file, (0x100,)), (OLD.file, (0x100,))]
    assert {(r.label, r.binary, r.build_id) for r in table} == {
        ("[mariadbd+0xf0 pause]", OLD.file, "aa"),
        ("[mariadbd+0x80]", NEW.file, "bb"),
    }
    assert rows is not None and len(rows) == len(stacks)
    assert not any("\t" in f or "@0x" in f for f in out.frames)


def test_one_binary_of_a_name_leaves_the_frame_table_as_before():
    stacks = Stacks.of({("mariadbd", "main", "[mariadbd@0x100]"): 7, ("mariadbd", "[mariadbd@0x100]"): 1})
    out, _rows, table, _reason, _ = unnamed.group_rows(stacks, (OLD, LIBC), fake_funcs([]))
    assert list(out.frames) == [("[mariadbd+0xf0 pause]" if f == "[mariadbd@0x100]" else f) for f in stacks.frames]
    assert [r.binary for r in table] == [OLD.file]


def test_two_builds_nothing_tells_apart_are_said_not_guessed():
    busy_new = Binary(path=NEW.path, build_id="bb", file=NEW.file, file_build_id="bb", samples=10)
    stacks = Stacks.of({("mariadbd", "main", "[mariadbd@0x100]"): 7})
    out, _rows, table, _reason, lines = unnamed.group_rows(stacks, (OLD, busy_new), fake_funcs([]))
    assert ("mariadbd", "main", "[mariadbd]") in dict(out.items()) and not table
    assert len(lines) == 1 and OLD.path in lines[0] and NEW.path in lines[0] and "--pid" in lines[0]


def test_skid_reads_only_the_binary_s_own_leaves():
    leaves = (Leaf(OLD.path, "", 0x104, 50), Leaf(OLD.path, "ut_delay", 0x10, 5))
    seen: list = []

    def fake_skid(file, samples=(), addresses=(), hot_only=False, debug=None):
        seen.append((file, list(samples), list(addresses)))
        return {"functions": []}

    skid.correct(leaves, (NEW, OLD), fake_skid)
    assert [s[0] for s in seen] == [OLD.file]  # the other build of that name is never given these leaves


def test_one_path_two_builds_gets_two_binaries_and_no_mixed_hot_spots(tmp_path: Path):
    wanted, recorded = {"/usr/sbin/mariadbd": 10}, {"/usr/sbin/mariadbd": "aa"}
    lookup = binmod.Lookup(cache=tmp_path, debuginfod=False)
    found = binmod.resolve(wanted, recorded, lookup, {"/usr/sbin/mariadbd": ("aa", "bb")})
    assert [b.build_id for b in found] == ["aa", "bb"]
    a = Binary(path="/x/mariadbd", build_id="aa", file="/x/a", samples=1)
    b = Binary(path="/x/mariadbd", build_id="bb", file="/x/b", samples=1)
    assert binmod.shared_paths((a, b)) == {"/x/mariadbd": ("aa", "bb")}
    calls: list = []
    skid.correct((Leaf("/x/mariadbd", "f", 1, 9),), (a, b), lambda *a, **k: calls.append(a) or {})
    assert not calls and "2 builds" in skid.left_out((a, b))[0]


def _profile(**analysis) -> Profile:
    run = Run(
        targets=(
            Target(pid=1, label="mariadbd-1", exe=OLD.path, build_id="aa"),
            Target(pid=2, label="mariadbd-2", exe=NEW.path, build_id="bb"),
        )
    )
    return Profile(Stacks.of({("mariadbd-1", "f"): 1}), run, analysis=Analysis(**analysis))


def test_annotate_takes_the_binary_the_label_was_cut_from(monkeypatch):
    profile = _profile(
        binaries=(OLD, NEW),
        unnamed=(UnnamedFunction(label="[mariadbd+0x80]", binary=NEW.file, start="0x80", build_id="bb"),),
    )
    asked: list = []
    monkeypatch.setattr(
        binmod,
        "find",
        lambda path, bid, *a, **k: asked.append((path, bid)) or Binary(path=path, build_id=bid, file=path),
    )
    assert annot.binary_for(profile, "[mariadbd+0x80]", binmod.Lookup()).path == NEW.path
    assert asked == [(NEW.path, "bb")]


def test_annotate_refuses_to_pick_between_two_builds_of_a_name():
    profile = _profile(binaries=(OLD, NEW))
    try:
        annot.binary_for(profile, "[mariadbd+0x80]", binmod.Lookup())
    except Exception as err:  # UsageError: the one-line error names both and the fix
        assert OLD.path in str(err) and NEW.path in str(err)
    else:
        raise AssertionError("picked one of two builds")


def test_binary_override_is_matched_by_build_id(monkeypatch):
    class Info:
        build_id = "bb"

    monkeypatch.setattr(annot, "ident", lambda path: Info())
    got = annot.override(Path("/tmp/copy/mariadbd"), _profile(binaries=(OLD, NEW)))
    assert (got.path, got.file, got.verified, got.problem) == (NEW.path, "/tmp/copy/mariadbd", True, "")
    Info.build_id = "zz"
    got = annot.override(Path("/tmp/copy/mariadbd"), _profile(binaries=(OLD, NEW)))
    assert got.verified is False and "differs" in got.problem and got.path == "/tmp/copy/mariadbd"


def test_rows_follow_the_split():
    stacks = Stacks.of(
        {("mariadbd-1", "[mariadbd@0x100]"): 1, ("mariadbd-2", "[mariadbd@0x100]"): 2, ("mariadbd-1", "f"): 4}
    )
    out, rows, *_ = unnamed.group_rows(stacks, (OLD, NEW), fake_funcs([]), MAPPED)
    assert np.array_equal(out.counts[rows], stacks.counts)


def test_unverified_binaries_of_one_name_are_said_by_path():
    from pmuprof.analysis.analyse import problems
    from pmuprof.analysis.load import Recording
    from pmuprof.model.run import Source

    a = Binary(path="/a/mariadbd", file="/a/mariadbd", samples=5)
    b = Binary(path="/b/mariadbd", file="/b/mariadbd", samples=5)
    c = Binary(path="/lib/libc.so.6", file="/lib/libc.so.6", samples=5)
    rec = Recording(Stacks.of({("mariadbd", "f"): 10}), (), Run(source=Source(kind="perf-script")))
    line = next(x for x in problems((a, b, c), 10, rec) if "no build-ids" in x)
    assert "/a/mariadbd, /b/mariadbd, libc.so.6 read at the paths" in line
