"""Issue 26 item 6: the folder and the perf.data reader, built with ASan+UBSan (make -C native sanitize),
run over real perf.data files recorded here, their perf script and folded texts, and a bounded, seeded
mutation corpus of each. Any sanitizer report (memory error, undefined behaviour, leak), a crash or a
hang fails the test; statuses stay those each program documents."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import perfdump
from helpers import REPO, need_perf
from shared import native_make

PROGS = REPO / "tests" / "native" / "progs"
SAN = REPO / "native" / "build-san"
# Reports abort the run with these statuses (and say so on stderr); allocations over 1 GiB return NULL
# (the programs must cope) and more than 1 GiB resident is a report too: memory stays bounded.
SAN_ENV = {
    "ASAN_OPTIONS": "detect_leaks=1:exitcode=86:allocator_may_return_null=1:max_allocation_size_mb=1024:"
    "hard_rss_limit_mb=1024:symbolize=1",
    "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:exitcode=87",
}
REPORTS = ("runtime error:", "AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer")
PERFDATA_OK = {0, 1, 3, 4, 5}  # pmuprof-perfdata's documented statuses (usage, 2, is never expected here)
FOLD_OK = {0}
FOLDED_OK = {0, 3}  # --folded: 3 names the line that is not a folded stack
MUTANTS = 120  # per kind of seed: 14 s of CPU for the three tests (45 s wall at load average 20, 2 vCPUs)
HANG_S = 60  # a single run of a 100 kB input taking this long is a hang, not load


def _sanitizer_works() -> bool:
    probe = subprocess.run(
        ["gcc", "-fsanitize=address,undefined", "-x", "c", "-", "-o", "/dev/null"],
        input=b"int main(void){return 0;}\n",
        capture_output=True,
    )
    return probe.returncode == 0


@pytest.fixture(scope="module")
def san() -> dict[str, Path]:
    """build-san/: skip without gcc or its sanitizer runtimes; FAIL when the sources do not build with them."""
    if not shutil.which("gcc") or not shutil.which("make"):
        pytest.skip("gcc/make not installed (apt-get install build-essential)")
    if not _sanitizer_works():
        pytest.skip("gcc cannot link -fsanitize=address,undefined here (apt-get install libasan8 libubsan1)")
    with native_make():
        res = subprocess.run(["make", "-C", str(REPO / "native"), "-j2", "sanitize"], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.fail(f"make -C native sanitize failed: {res.stderr.strip()[-800:]}")
    bins = {"fold": SAN / "pmuprof-fold", "perfdata": SAN / "pmuprof-perfdata"}
    if not bins["perfdata"].is_file():
        pytest.skip("pmuprof-perfdata is not built here (needs libdw-dev libelf-dev libiberty-dev)")
    return bins


@pytest.fixture(scope="module")
def seeds(tmp_path_factory, san) -> dict[str, bytes]:
    """Real inputs: perf.data files of known programs (frame pointers, C++ names), their perf script text
    as pmuprof asks for it and perf's default text, and the folded stacks the folder makes of it."""
    perf = need_perf()
    tmp = tmp_path_factory.mktemp("sanseeds")
    env = {**os.environ, "HOME": str(tmp)}
    exes = {"work": ["gcc", str(PROGS / "pd_work.c"), "-pthread"], "cpp": ["g++", str(PROGS / "pd_cpp.cpp")]}
    out: dict[str, bytes] = {}
    for name, argv in exes.items():
        if not shutil.which(argv[0]):
            pytest.skip(f"{argv[0]} is not installed")
        exe = tmp / name
        subprocess.run([*argv, "-O1", "-g", "-fno-omit-frame-pointer", "-o", str(exe)], check=True)
        data = tmp / f"{name}.data"
        rec = subprocess.run(
            [perf, "record", "-q", "-g", "--user-regs=sp", "-F", "1999", "-o", str(data), "--", str(exe), "0.3"],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if rec.returncode != 0 or not data.is_file():
            pytest.skip(f"perf record does not work here: {rec.stderr.strip()[-200:]}")
        out[f"{name}.data"] = data.read_bytes()
    data = tmp / "work.data"
    script = subprocess.run(
        [perf, "script", "-i", str(data), "-F", "comm,pid,tid,time,ip,sym,symoff,dso", "--no-inline"],
        env=env,
        capture_output=True,
        timeout=120,
        check=True,
    ).stdout
    out["script"] = script
    out["script_default"] = subprocess.run(
        [perf, "script", "-i", str(data), "--no-inline"], env=env, capture_output=True, timeout=120, check=True
    ).stdout
    out["dump"] = subprocess.run(
        [perf, "script", "-D", "-i", str(data)], env=env, capture_output=True, timeout=120, check=True
    ).stdout  # raw call chains: the addresses a caller table is keyed on
    out["folded"] = subprocess.run(
        [str(san["fold"])], input=script, env={**os.environ, **SAN_ENV}, capture_output=True, timeout=HANG_S, check=True
    ).stdout
    assert out["folded"].count(b"\n") > 5, "the seed recording holds too few stacks to fuzz from"
    return out


# Values that break size and offset arithmetic: zero, one, all ones, the sign bit, page-ish sizes.
EDGES = (
    0,
    1,
    7,
    8,
    0xFF,
    0xFFFF,
    0x7FFFFFFF,
    0xFFFFFFFF,
    0x7FFFFFFFFFFFFFFF,
    0x8000000000000000,
    0xFFFFFFFFFFFFFFFF,
    4096,
    65535,
    65536,
)
TEXT_BITS = (
    b"\0",
    b";",
    b";;",
    b"\t",
    b" ",
    b"\n",
    b"\n\n",
    b" 0x",
    b"+0x",
    b"(",
    b")",
    b"[unknown]",
    b" 99999999999999999999999",
    b" -1",
    b"\xff\xfe",
    b"\xe2\x80\xae",
    b"x" * 5000,
    b" (inlined)",
    b"\n\tffffffffffffffff [unknown] ([unknown])\n",
    b"perf 1/1 [000] 1.5: cpu-clock:\n",
)


def mutate_binary(rng: random.Random, data: bytes) -> bytes:
    """One to four edits; most land in the header and the first records, where sizes and offsets live."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        hot = min(len(buf), 4096) if rng.random() < 0.6 else len(buf)
        kind = rng.randrange(5)
        pos = rng.randrange(max(hot - 8, 1)) & ~(7 if kind == 1 else 0)
        if kind == 0:
            buf[pos] ^= 1 << rng.randrange(8)
        elif kind in (1, 2):
            width = 8 if kind == 1 else rng.choice((2, 4))
            value = rng.choice(EDGES) & ((1 << (8 * width)) - 1)
            buf[pos : pos + width] = value.to_bytes(width, "little")
        elif kind == 3:
            del buf[rng.randrange(len(buf)) :]
        else:
            start = rng.randrange(len(buf))
            buf[start:start] = buf[start : start + rng.randint(1, 256)]
    return bytes(buf)


def mutate_text(rng: random.Random, data: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    for _ in range(rng.randint(1, 4)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        kind = rng.randrange(5)
        if kind == 0:
            at = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:at] + rng.choice(TEXT_BITS) + lines[i][at:]
        elif kind == 1:
            del lines[i : i + rng.randint(1, 8)]
        elif kind == 2:
            lines[i:i] = lines[i : i + rng.randint(1, 8)]
        elif kind == 3:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
        else:
            lines = lines[: i + 1]
            lines[-1] = lines[-1].rstrip(b"\n")
    return b"".join(lines)


def run_one(argv: list[str], stdin: bytes | None, ok: set[int], what: str) -> str | None:
    """None when the run was clean, else one line saying what went wrong (the report's first lines)."""
    try:
        res = subprocess.run(argv, input=stdin, capture_output=True, timeout=HANG_S, env={**os.environ, **SAN_ENV})
    except subprocess.TimeoutExpired:
        return f"{what}: hung for {HANG_S} s"
    err = res.stderr.decode("utf-8", "replace")
    if any(r in err for r in REPORTS) or res.returncode not in ok:
        lines = [line for line in err.splitlines() if line.strip()][:12]
        return f"{what}: status {res.returncode}: " + " | ".join(lines)
    return None


def _perfdata_case(san: dict, tmp: Path, name: str, data: bytes, opts: tuple[str, ...]) -> str | None:
    path = tmp / f"{name}.data"
    path.write_bytes(data)
    out = tmp / name
    argv = [
        str(san["perfdata"]),
        *opts,
        "--leaves",
        f"{out}.l",
        "--meta",
        f"{out}.m",
        "--samples",
        f"{out}.s",
        str(path),
    ]
    return run_one(argv, None, PERFDATA_OK, f"pmuprof-perfdata {' '.join(opts)} on {path.name}")


PERFDATA_OPTS = ((), ("--inline",), ("--time", "--per-thread"), ("--raw-unknown", "--comm", "pd_work"))


def _fuzz(cases: list, worker) -> list[str]:
    with ThreadPoolExecutor(2) as pool:  # this machine's size; the runs are single-threaded
        return [bad for bad in pool.map(lambda c: worker(*c), cases) if bad]


def test_perfdata_reader_is_clean_on_real_and_mutated_recordings(san, seeds, tmp_path):
    rng = random.Random(26)
    cases = []
    for kind in ("work.data", "cpp.data"):
        for opts in PERFDATA_OPTS:
            cases.append((san, tmp_path, f"{kind}-seed{len(cases)}", seeds[kind], opts))
        for i in range(MUTANTS // 2):
            cases.append((san, tmp_path, f"{kind}-{i}", mutate_binary(rng, seeds[kind]), rng.choice(PERFDATA_OPTS)))
    bad = _fuzz(cases, _perfdata_case)
    assert not bad, f"{len(bad)} of {len(cases)} runs:\n" + "\n".join(bad[:5])


def callers_table(dump: bytes) -> bytes:
    """A recovered-callers.tsv (model/callers.py) keyed on the seed recording's own chains (perf script -D):
    walk rows on each leaf and its return addresses, stopped-walk rows on each sample's thread, user sp and
    leaf, so the reader splices (the seed's samples carry --user-regs=sp)."""
    lines, seen = [b"# pmuprof recovered callers 1"], set()
    for s in perfdump.samples(dump):
        user = s.user[:4]
        if len(user) < 2 or (s.pid, user) in seen:
            continue
        seen.add((s.pid, user))
        key = b",".join(b"%x" % a for a in user)
        lines.append(b"%d\t0\t0\t1\t%s\t%d\t%x,%x" % (s.pid, key, min(2, len(user)), user[-1], user[0]))
        if s.sp:
            lines.append(b"%d\t%d\t%x\t1\t%x\t1\t%s" % (s.pid, s.tid, s.sp, user[0], key))
    return b"\n".join(lines) + b"\n"


def _callers_case(san: dict, tmp: Path, name: str, data: Path, table: bytes) -> str | None:
    path = tmp / f"{name}.tsv"
    path.write_bytes(table)
    out = tmp / name
    argv = [str(san["perfdata"]), "--callers", str(path), "--meta", f"{out}.m", "--stacks-bin", f"{out}.b", str(data)]
    return run_one(argv, None, PERFDATA_OK, f"pmuprof-perfdata --callers on table {name}")


def test_perfdata_reader_is_clean_on_real_and_mutated_caller_tables(san, seeds, tmp_path):
    """--callers reads a run directory's recovered-callers.tsv: untrusted, so fuzzed like the rest."""
    data = tmp_path / "work.data"
    data.write_bytes(seeds["work.data"])
    table = callers_table(seeds["dump"])
    assert table.count(b"\n") > 5, "the seed recording gave too few chains for a table"
    rng = random.Random(21)
    cases = [
        (san, tmp_path, "seed", data, table),
        (san, tmp_path, "empty", data, b""),
        (san, tmp_path, "long-line", data, b"1\t0\t0\t1\t" + b"a," * 5000 + b"\t1\ta\n" + table),
        (san, tmp_path, "huge-numbers", data, b"99999999999\t-1\tfffffffffffffffff\t1\tffffffffffffffffff\t-1\t0\n"),
    ]
    cases += [(san, tmp_path, f"table-{i}", data, mutate_text(rng, table)) for i in range(MUTANTS // 4)]
    bad = _fuzz(cases, _callers_case)
    assert not bad, f"{len(bad)} of {len(cases)} runs:\n" + "\n".join(bad[:5])
    meta = (tmp_path / "seed.m").read_text()
    assert '"recovered_samples": 0' not in meta, meta[-300:]  # the seed's keys are its own chains: they splice


def _fold_case(san: dict, tmp: Path, name: str, text: bytes, opts: tuple[str, ...]) -> str | None:
    folded = "--folded" in opts
    out = tmp / name
    files = (
        ("--stacks-bin", f"{out}.bin")
        if folded
        else ("--leaves", f"{out}.l", "--meta", f"{out}.m", "--samples", f"{out}.s")
    )
    return run_one(
        [str(san["fold"]), *opts, *files],
        text,
        FOLDED_OK if folded else FOLD_OK,
        f"pmuprof-fold {' '.join(opts)} on case {name}",
    )


# Empty frame names (and an empty comm) met twice: the first is interned without a byte stored.
EMPTY_NAMES_FOLDED = b";;a 1\n;b 2\n"
EMPTY_NAMES_SCRIPT = b"  1/1 1.0: cpu-clock:\n\t0  ()\n\t1  ()\n\n  1/1 1.5: cpu-clock:\n\t0  ()\n\n"
FOLD_OPTS = ((), ("--per-thread",), ("--raw-unknown", "--comm", "pd_work"), ("--name", "1=x", "--truncated"))


def test_folder_is_clean_on_real_mutated_and_empty_texts(san, seeds, tmp_path):
    rng = random.Random(2026)
    cases = [
        (san, tmp_path, "empty", b"", ()),
        (san, tmp_path, "empty-folded", b"", ("--folded",)),
        (san, tmp_path, "folded", seeds["folded"], ("--folded",)),
        (san, tmp_path, "empty-names-folded", EMPTY_NAMES_FOLDED, ("--folded",)),
        (san, tmp_path, "empty-names", EMPTY_NAMES_SCRIPT, ("--per-thread",)),
    ]
    for kind in ("script", "script_default"):
        cases += [(san, tmp_path, f"{kind}-seed{i}", seeds[kind], o) for i, o in enumerate(FOLD_OPTS)]
        for i in range(MUTANTS // 4):
            cases.append((san, tmp_path, f"{kind}-{i}", mutate_text(rng, seeds[kind]), rng.choice(FOLD_OPTS)))
    for i in range(MUTANTS // 2):
        cases.append((san, tmp_path, f"folded-{i}", mutate_text(rng, seeds["folded"]), ("--folded",)))
    bad = _fuzz(cases, _fold_case)
    assert not bad, f"{len(bad)} of {len(cases)} runs:\n" + "\n".join(bad[:5])


def test_a_sanitizer_report_fails_a_run(san, tmp_path):
    """The detector itself: a run that leaks or overflows is reported, whatever its exit status."""
    src = tmp_path / "bad.c"
    src.write_text(
        "#include <stdlib.h>\n#include <string.h>\nint main(int c, char **v) {\n"
        "  char *p = malloc(64); if (c > 1) return (int)strlen(p + 64 + strlen(v[1]));\n"
        "  return p == 0; }\n"
    )
    exe = tmp_path / "bad"
    subprocess.run(["gcc", "-g", "-fsanitize=address,undefined", "-o", str(exe), str(src)], check=True)
    leak = run_one([str(exe)], None, {0}, "leak")
    overflow = run_one([str(exe), ""], None, {0, 1}, "overflow")
    assert leak and "LeakSanitizer" in leak
    assert overflow and "AddressSanitizer" in overflow
