"""pprof with CPU time, mappings, build-ids and run-time addresses; speedscope with a time unit and threads,
each checked by its own tool or schema."""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import REPO, make_profile
from test_export import _fields, _packed
from pmuprof.analysis.addresses import load_biases
from pmuprof.model.analysis import Binary
from pmuprof.model.run import FileMap
from pmuprof.report.export import export_bytes, export_profile
from pmuprof.tools.elf import ElfFile

import gzip

BID = "ab" * 20
RUN = {
    "started": "2026-11-21T12:00:00Z",
    "duration_s": 5.0,
    "record": {"frequency": 99},
    "targets": [
        {
            "pid": 7,
            "label": "mariadbd",
            "exe": "/usr/sbin/mariadbd",
            "build_id": BID,
            "maps": [
                {"start": 0x55D000001000, "end": 0x55D001001000, "pgoff": 0x1000, "path": "/usr/sbin/mariadbd"},
                {
                    "start": 0x7F0000028000,
                    "end": 0x7F000019D000,
                    "pgoff": 0x28000,
                    "path": "/usr/lib/x86_64-linux-gnu/libc.so.6",
                },
            ],
        }
    ],
}
ANALYSIS = {
    "binaries": [{"path": "/usr/sbin/mariadbd", "build_id": BID, "file": "/usr/sbin/mariadbd"}],
    "unnamed": [{"label": "[mariadbd+0xde2ac0 pause]", "binary": "/usr/sbin/mariadbd", "start": "0xde2ac0"}],
}
STACKS = {
    ("mariadbd", "start_thread", "do_command", "[mariadbd+0xde2ac0 pause]"): 600,
    ("mariadbd", "start_thread", "row_search_mvcc"): 300,
    ("mariadbd", "start_thread", "tcp_recvmsg_[k]"): 57,
}


def _decode(data: bytes) -> dict:
    fields = list(_fields(gzip.decompress(data)))
    strings = [v.decode() for n, _, v in fields if n == 6]
    msgs = lambda number: [{n: v for n, _, v in _fields(m)} for k, _, m in fields if k == number]  # noqa: E731
    scalars = {n: v for n, w, v in fields if w == 0}
    types = [(strings[m[1]], strings[m[2]]) for m in msgs(1)]
    return {
        "strings": strings,
        "types": types,
        "samples": msgs(2),
        "mappings": msgs(3),
        "locations": msgs(4),
        "functions": msgs(5),
        "scalars": scalars,
        "period_type": {n: v for n, _, v in _fields(next(v for n, _, v in fields if n == 11))},
    }


def test_pprof_has_cpu_time_mappings_build_ids_and_addresses():
    prof = make_profile(STACKS, RUN, analysis=ANALYSIS)
    period = round(1e9 / 99)
    doc = _decode(export_bytes(prof, "pprof", biases={"/usr/sbin/mariadbd": 0x55D000000000}))
    assert doc["types"] == [("samples", "count"), ("cpu", "nanoseconds")]
    assert doc["scalars"][12] == period and doc["strings"][doc["period_type"][1]] == "cpu"
    assert doc["strings"][doc["scalars"][14]] == "cpu"  # default sample type
    assert doc["scalars"][9] == 1795262400 * 10**9  # time_nanos from run.json's started
    for s in doc["samples"]:
        count, cpu = _packed(s[2])
        assert cpu == count * period
    maps = {doc["strings"][m[5]]: m for m in doc["mappings"]}
    main = maps["/usr/sbin/mariadbd"]
    assert (main[2], main[3], main[4]) == (0x55D000001000, 0x55D001001000, 0x1000)
    assert doc["strings"][main[6]] == BID and main[7] == 1
    assert "/usr/lib/x86_64-linux-gnu/libc.so.6" in maps and "[kernel.kallsyms]" in maps
    names = {f[1]: doc["strings"][f[2]] for f in doc["functions"]}
    by_name = {names[loc[1]]: loc for loc in doc["locations"]}
    spin = by_name["[mariadbd+0xde2ac0 pause]"]
    assert spin[2] == main[1] and spin[3] == 0x55D000000000 + 0xDE2AC0
    assert main[2] <= spin[3] < main[3]
    assert by_name["tcp_recvmsg_[k]"][2] == maps["[kernel.kallsyms]"][1]
    assert by_name["row_search_mvcc"].get(3, 0) == 0  # a named frame: the input has no address for it


def test_without_a_frequency_pprof_and_speedscope_stay_in_samples():
    prof = make_profile(STACKS, {})
    assert _decode(export_bytes(prof, "pprof"))["types"] == [("samples", "count")]
    doc = json.loads(export_bytes(prof, "speedscope"))
    assert {p["unit"] for p in doc["profiles"]} == {"none"} and doc["profiles"][0]["endValue"] == 957


def test_load_bias_turns_elf_addresses_into_run_time_addresses():
    """libc as this process mapped it: malloc's ELF value + bias is where ctypes finds malloc."""
    libc = ctypes.CDLL(None)
    runtime = ctypes.cast(libc.malloc, ctypes.c_void_p).value
    maps = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 6 and "x" in parts[1] and "/libc.so" in parts[5]:
            start, end = (int(x, 16) for x in parts[0].split("-"))
            maps.append(FileMap(start, end, int(parts[2], 16), parts[5]))
    if not maps:
        pytest.skip("no libc.so mapping in /proc/self/maps (static or musl Python)")
    path = maps[0].path
    biases = load_biases([Binary(path, file=path, verified=True)], maps)
    found = ElfFile(Path(path)).find("malloc")
    assert found is not None
    assert found[0].value + biases[path] == runtime
    assert load_biases([Binary(path, file=path, verified=False)], maps) == {}  # another build-id: no guess


def _threads_profile():
    stacks = {
        ("mariadbd", "mariadbd-11", "start_thread", "ut_delay"): 30,
        ("mariadbd", "mariadbd-12", "start_thread", "row_search_mvcc"): 20,
        ("mariadbd", "mariadbd-12", "start_thread", "ut_delay"): 5,
    }
    return make_profile(stacks, {"record": {"frequency": 1000}})


def test_speedscope_one_profile_per_thread_in_nanoseconds():
    doc = json.loads(export_bytes(_threads_profile(), "speedscope", per_thread=True))
    assert [p["name"] for p in doc["profiles"]] == ["mariadbd mariadbd-11", "mariadbd mariadbd-12"]
    assert all(p["unit"] == "nanoseconds" for p in doc["profiles"])
    assert [p["endValue"] for p in doc["profiles"]] == [30 * 10**6, 25 * 10**6]
    frames = [f["name"] for f in doc["shared"]["frames"]]
    assert "mariadbd-11" not in frames  # the thread is the profile, not a frame


def test_speedscope_validates_against_its_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema", reason="pip install jsonschema")
    from tests_speedscope import speedscope_schema

    schema = json.loads(speedscope_schema().read_text())
    from report_fixtures import profile

    for doc in (
        json.loads(export_bytes(profile(), "speedscope")),
        json.loads(export_bytes(_threads_profile(), "speedscope", per_thread=True)),
    ):
        jsonschema.validate(doc, schema)
    broken = json.loads(export_bytes(profile(), "speedscope"))
    broken["profiles"][0]["unit"] = "samples"  # not a unit speedscope knows
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_pprof_tool_reads_cpu_time_and_mappings(tmp_path):
    from tests_pprof import pprof_tool

    tool = pprof_tool()
    prof = make_profile(STACKS, RUN, analysis=ANALYSIS)
    path = export_profile(prof, "pprof", tmp_path / "p.pb.gz", biases={"/usr/sbin/mariadbd": 0x55D000000000})
    env = {**os.environ, "PPROF_TMPDIR": str(tmp_path), "HOME": str(tmp_path)}
    raw = subprocess.run([tool, "-raw", str(path)], capture_output=True, text=True, timeout=120, env=env)
    assert raw.returncode == 0, raw.stderr
    assert "PeriodType: cpu nanoseconds" in raw.stdout and "Period: 10101010" in raw.stdout
    assert re.search(r"samples/count cpu/nanoseconds", raw.stdout)
    assert re.search(rf"0x55d000001000/0x55d001001000/0x1000 /usr/sbin/mariadbd {BID}", raw.stdout)
    assert "0x55d000de2ac0" in raw.stdout  # the unnamed function at its run-time address
    top = subprocess.run(
        [tool, "-top", "-symbolize=none", "-sample_index=cpu", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert top.returncode == 0, top.stderr
    assert f"{957 * 10101010 / 1e6:.2f}ms total" in top.stdout, top.stdout  # 957 samples x 1e9/99 ns
    assert re.search(r"6060\.61ms\s+62\.70%.*\[mariadbd\+0xde2ac0 pause\]", top.stdout), top.stdout


def test_a_new_format_is_one_entry_in_the_registry(tmp_path: Path) -> None:
    """docs/internals.md: a new export format is its writer module plus one FORMATS entry (and the regenerated
    CLI docs); the command's --format choices, help and per-format needs come from the entry. Shown in a fresh
    interpreter that registers a writer defined here before the command is built, as an entry in export.py
    would be: the command accepts it, asks for what it declares, and writes its bytes."""
    folded = tmp_path / "in.folded"
    folded.write_text("mariadbd;do_command;ut_delay 7\nmariadbd;do_command 3\n")
    program = textwrap.dedent("""
        import sys
        from pmuprof.report.export import FORMATS, Format

        def lines(profile, ask):
            print(f"asked: headers={ask.headers} biases={ask.biases} per_thread={ask.per_thread}", file=sys.stderr)
            return "".join(f"{n} {';'.join(s)}\\n" for s, n in sorted(profile.stacks.items())).encode()

        FORMATS["count-first"] = Format("counts before stacks", lines)
        from pmuprof.cli.main import main
        sys.exit(main(sys.argv[1:]))
    """)
    out = tmp_path / "out.txt"
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def run(*args):
        return subprocess.run(
            [sys.executable, "-c", program, "export", str(folded), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    done = run("-f", "count-first", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_text() == "3 mariadbd;do_command\n7 mariadbd;do_command;ut_delay\n"
    assert "asked: headers=False biases={} per_thread=False" in done.stderr
    bad = run("-f", "nope", "-o", str(out))
    assert bad.returncode == 2 and "count-first" in bad.stderr  # the choices listed are the registry's
    assert "count-first: counts before stacks" in run("--help").stdout
