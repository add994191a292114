"""export: folded round trip, pprof (decoded here and read back by Google's pprof), speedscope JSON."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
from collections import Counter

from report_fixtures import HOSTILE_TEMPLATE, profile

from pmuprof.model.folded import parse_folded
from helpers import make_profile
from pmuprof.report.export import export_bytes, export_profile
from pmuprof.report.pprof import varint


def _fields(buf: bytes):
    """(field number, wire type, value) of one protobuf message: varints and length-delimited only."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + size], pos + size
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        yield number, wire, value


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, pos


def _packed(buf: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(buf):
        value, pos = _varint(buf, pos)
        out.append(value)
    return out


def _decode(data: bytes) -> dict[tuple[str, ...], int]:
    """Stacks (root first) and counts back from the gzipped profile.proto."""
    fields = list(_fields(gzip.decompress(data)))
    strings = [v.decode() for n, _, v in fields if n == 6]
    funcs = {}
    for _, _, msg in (f for f in fields if f[0] == 5):
        d = {n: v for n, _, v in _fields(msg)}
        funcs[d[1]] = strings[d[2]]
    locs = {}
    for _, _, msg in (f for f in fields if f[0] == 4):
        d = {n: v for n, _, v in _fields(msg)}
        line = {n: v for n, _, v in _fields(d[4])}
        locs[d[1]] = funcs[line[1]]
    stacks: Counter = Counter()
    for _, _, msg in (f for f in fields if f[0] == 2):
        d = {n: v for n, _, v in _fields(msg)}
        stacks[tuple(locs[i] for i in reversed(_packed(d[1])))] += _packed(d[2])[0]
    assert strings[0] == ""
    return dict(stacks)


def test_varint_encoding():
    assert varint(0) == b"\x00" and varint(1) == b"\x01" and varint(300) == b"\xac\x02"
    assert len(varint(-1)) == 10


def test_pprof_round_trip_in_python():
    prof = profile()
    data = export_bytes(prof, "pprof")
    assert data[:2] == b"\x1f\x8b"
    assert _decode(data) == {s: c for s, c in prof.stacks.items()}
    assert export_bytes(prof, "pprof") == data  # byte-stable (gzip mtime 0)


def test_folded_round_trip_with_and_without_headers():
    prof = profile()
    text = export_bytes(prof, "folded", headers=True).decode()
    stacks, headers = parse_folded(text.splitlines())
    assert stacks == dict(prof.stacks)
    assert headers["event_recorded"] == "cpu-clock" and headers["samples"] == str(prof.total)
    bare = export_bytes(prof, "folded").decode()  # the default: stack lines only
    assert not any(line.startswith("#") for line in bare.splitlines())
    assert parse_folded(bare.splitlines()) == (dict(prof.stacks), {})  # pmuprof reads both


def test_speedscope_document():
    prof = profile()
    doc = json.loads(export_bytes(prof, "speedscope"))
    frames = [f["name"] for f in doc["shared"]["frames"]]
    assert [p["name"] for p in doc["profiles"]] == ["mariadbd", "mariadbd-2"]
    for p in doc["profiles"]:
        assert p["type"] == "sampled" and len(p["samples"]) == len(p["weights"])
        assert p["endValue"] == sum(p["weights"])
    main = doc["profiles"][0]
    period = round(1e9 / prof.run.record.frequency)  # weights are CPU time: samples x 1e9/F ns
    assert main["unit"] == "nanoseconds"
    got = Counter()
    for sample, weight in zip(main["samples"], main["weights"]):
        got[tuple(frames[i] for i in sample)] += weight
    assert got[("start_thread", "do_command", "row_search_mvcc", HOSTILE_TEMPLATE)] == 40 * period
    assert sum(doc["profiles"][i]["endValue"] for i in range(2)) == prof.total * period


def _pprof_tool() -> str:
    from tests_pprof import pprof_tool

    return pprof_tool()


def test_pprof_tool_reads_the_export(tmp_path):
    tool = _pprof_tool()
    stacks = {
        ("mysqld", "start_thread", "do_command", "ut_delay"): 600,
        ("mysqld", "start_thread", "row_search_mvcc"): 300,
        ("mysqld", "start_thread", "tcp_recvmsg_[k]"): 50,
        ("mysqld", "start_thread", "do_command"): 7,
    }
    prof = make_profile(stacks, {"duration_s": 5.0})
    path = export_profile(prof, "pprof", tmp_path / "p.pb.gz")
    out = subprocess.run(
        [tool, "-top", "-symbolize=none", "-nodecount=50", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PPROF_TMPDIR": str(tmp_path), "HOME": str(tmp_path)},
    )
    assert out.returncode == 0, out.stderr
    assert f"Total samples = {prof.total}" in out.stdout or re.search(rf"\b{prof.total} total\b", out.stdout)
    flat = {}
    for line in out.stdout.splitlines():
        cols = line.split()
        if len(cols) >= 6 and cols[0].isdigit():
            flat[cols[5]] = int(cols[0])
    want = {n: c for n, c in prof.self_counts().items() if c}
    assert {n: flat.get(n) for n in want} == want
    top = [line.split()[-1] for line in out.stdout.splitlines() if re.match(r"^\s*\d+\s+\d", line)]
    assert top[:3] == ["ut_delay", "row_search_mvcc", "tcp_recvmsg_[k]"]


def test_export_command_writes_file_and_stdout(tmp_path, capsysbinary):
    from pmuprof.cli.main import main
    from pmuprof.model.folded import save_folded

    src = tmp_path / "in.folded"
    save_folded(src, profile().stacks)
    assert main(["export", str(src), "-f", "speedscope", "-o", str(tmp_path / "s.json")]) == 0
    assert json.loads((tmp_path / "s.json").read_text())["profiles"]
    capsysbinary.readouterr()
    assert main(["export", str(src), "-f", "folded", "-o", "-"]) == 0
    assert capsysbinary.readouterr().out.startswith(b"mariadbd")  # no header lines unless asked
    assert main(["export", str(src), "-f", "folded", "--no-headers", "-o", "-"]) == 0  # older scripts pass it
    assert capsysbinary.readouterr().out.startswith(b"mariadbd")
    assert main(["export", str(src), "-f", "folded", "--headers", "-o", "-"]) == 0
    assert capsysbinary.readouterr().out.startswith(b"# ")
    assert main(["export", str(src), "-f", "nope", "-o", "-"]) != 0
