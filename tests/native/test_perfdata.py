"""pmuprof-perfdata against `perf script ... | pmuprof-fold` on real recordings, byte for byte."""

from __future__ import annotations

from dataclasses import replace

import ctypes
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from native_support import PROGS, native_binary
from pmuprof import arch
from pmuprof.capture.proc.kernel import text_lines
from pmuprof.tools.native import fold as fastfold
from pmuprof.tools.native import perfdata as perfdata_reader

FIELDS = "comm,pid,tid,ip,sym,symoff,dso"
PROG_SECS = "0.6"


def _need_tools() -> None:
    for tool in ("perf", "gcc", "g++"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (apt-get install linux-perf gcc g++)")
    if os.geteuid() != 0:
        pytest.skip("needs root: system-wide perf record and /proc/kallsyms addresses")


@pytest.fixture(scope="module")
def bins() -> dict[str, Path]:
    return {"fold": native_binary("pmuprof-fold"), "perfdata": native_binary("pmuprof-perfdata")}


def _load_bpf_program(name: bytes) -> int:
    """A trivial socket-filter BPF program (kept loaded while fd is open): perf records a KSYMBOL for it."""
    libc = ctypes.CDLL(None, use_errno=True)
    insns = ctypes.create_string_buffer(bytes([0xB7, 0, 0, 0, 0, 0, 0, 0, 0x95, 0, 0, 0, 0, 0, 0, 0]))  # r0 = 0; exit
    license = ctypes.create_string_buffer(b"GPL")
    attr = struct.pack("=IIQQIIQII16s", 1, 2, ctypes.addressof(insns), ctypes.addressof(license), 0, 0, 0, 0, 0, name)
    buf = ctypes.create_string_buffer(attr, 128)
    return libc.syscall(arch.SYSCALLS["bpf"], 5, buf, 128)  # bpf(BPF_PROG_LOAD); -1 when refused


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> dict:
    """Compiled programs and an environment whose HOME (perf's build-id cache) is private to the test."""
    _need_tools()
    tmp = tmp_path_factory.mktemp("perfdata")
    home = tmp / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home)}
    env.pop("PERF_CONFIG", None)
    fp = ["-O1", "-g", "-fno-omit-frame-pointer"]
    builds = {
        "pie": ["gcc", *fp, "-pthread", "-fPIE", "-pie", str(PROGS / "pd_work.c")],
        "nopie": ["gcc", *fp, "-pthread", "-no-pie", "-DPD_VARIANT=2", str(PROGS / "pd_work.c")],
        "stripped": ["gcc", *fp, "-pthread", "-DPD_VARIANT=3", str(PROGS / "pd_work.c")],
        "cpp": ["g++", *fp, str(PROGS / "pd_cpp.cpp")],
        "jit": ["gcc", *fp, str(PROGS / "pd_jit.c"), "-ldl"],
        "libpd.so": ["gcc", *fp, "-shared", "-fPIC", str(PROGS / "pd_lib.c")],
        "odd": ["gcc", *fp, "-pthread", str(PROGS / "pd_odd.c"), "-ldl"],
    }
    exes = {}
    for name, argv in builds.items():
        exes[name] = tmp / name
        subprocess.run([*argv, "-o", str(exes[name])], check=True, capture_output=True)
    subprocess.run(["strip", str(exes["stripped"])], check=True)
    bpf = _load_bpf_program(b"pd_test")  # every recording then starts with KSYMBOL records
    yield {"tmp": tmp, "env": env, "exes": exes, "bpf": bpf}
    if bpf >= 0:
        os.close(bpf)


def _record(lab: dict, name: str, opts: list[str], cmd: list[str]) -> Path:
    out = lab["tmp"] / f"{name}.data"
    res = subprocess.run(
        ["perf", "record", "-q", "-o", str(out), *opts, "--", *cmd],
        env=lab["env"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if res.returncode != 0 or not out.is_file():
        pytest.skip(f"perf record does not work here ({res.returncode}): {res.stderr.strip()[-200:]}")
    return out


def _record_beside(lab: dict, name: str, opts: list[str], secs: str = "6") -> Path:
    """Record while pd_work runs beside it: system-wide for the 2 s of a `sleep` perf starts once its events
    are set up; attached (-p) for 3 s, stopped with SIGINT as pmuprof stops perf."""
    work = subprocess.Popen([str(lab["exes"]["pie"]), secs], stdout=subprocess.DEVNULL, env=lab["env"])
    out = lab["tmp"] / f"{name}.data"
    try:
        time.sleep(0.2)
        attach = "-p" in opts
        opts = [o.replace("PID", str(work.pid)) for o in opts] + ([] if attach else ["--", "sleep", "2"])
        perf = subprocess.Popen(
            ["perf", "record", "-q", "-o", str(out), *opts], env=lab["env"], stderr=subprocess.PIPE, text=True
        )
        if attach:
            time.sleep(3)
            perf.send_signal(signal.SIGINT)
        _, err = perf.communicate(timeout=120)
    finally:
        work.kill()
        work.wait(timeout=60)
    if perf.returncode not in (0, -signal.SIGINT) or not out.is_file():  # perf re-raises SIGINT
        pytest.skip(f"perf record does not work here ({perf.returncode}): {err.strip()[-200:]}")
    return out


ODD_DIRS = ("lib (open", "lib\nline")  # an unbalanced parenthesis and a line break in a DSO's path


def _odd_libraries(lab: dict) -> list[str]:
    """pd_lib.c's library in directories whose names perf script's "(dso)" text cannot hold plainly."""
    paths = []
    for name in ODD_DIRS:
        (lab["tmp"] / name).mkdir(exist_ok=True)
        paths.append(str(shutil.copy(lab["exes"]["libpd.so"], lab["tmp"] / name / "libpd.so")))
    return paths


@pytest.fixture(scope="module")
def recordings(lab) -> dict[str, Path]:
    x = lab["exes"]
    g = ["-g", "-F", "2999"]
    return {
        "odd": _record(lab, "odd", g, [str(x["odd"]), PROG_SECS, *_odd_libraries(lab)]),
        "pie": _record(lab, "pie", g, [str(x["pie"]), PROG_SECS]),
        "nopie": _record(lab, "nopie", g, [str(x["nopie"]), PROG_SECS]),
        "stripped": _record(lab, "stripped", g, [str(x["stripped"]), PROG_SECS]),
        "cpp": _record(lab, "cpp", g, [str(x["cpp"]), PROG_SECS]),
        "jit": _record(lab, "jit", g, [str(x["jit"]), PROG_SECS, str(x["libpd.so"])]),
        "nocallchain": _record(lab, "nocallchain", ["-F", "2999"], [str(x["pie"]), PROG_SECS]),
        "two_events": _record(lab, "two_events", [*g, "-e", "cpu-clock,task-clock"], [str(x["pie"]), PROG_SECS]),
        "attach": _record_beside(lab, "attach", [*g, "-p", "PID"]),
        "system": _record_beside(lab, "system", ["-a", "-g", "-F", "999", "-e", "cpu-clock"]),
        "system_user": _record_beside(lab, "system_user", ["-a", "-g", "-F", "999", "-e", "cpu-clock:u"]),
    }


# perf script's text of a recording (for these pids, with this build-id cache), read once: the option sets'
# tests compare with it, and perf script of one file gives the same text every time
SCRIPTS: dict[tuple, bytes] = {}


def _perf_script(lab: dict, data: Path, pids: tuple[int, ...] = ()) -> bytes:
    key = (data, pids, lab["env"]["HOME"])
    if key not in SCRIPTS:
        argv = ["perf", "script", "-i", str(data), "-F", FIELDS, "--no-inline"]
        if pids:
            argv.append("--pid=" + ",".join(map(str, pids)))
        SCRIPTS[key] = subprocess.run(argv, env=lab["env"], capture_output=True, check=True, timeout=300).stdout
    return SCRIPTS[key]


BUSIEST: dict[tuple, tuple[int, str]] = {}


def _busiest(lab: dict, data: Path) -> tuple[int, str]:
    """The process with the most samples, and the name its samples carry most."""
    key = (data, lab["env"]["HOME"])
    if key not in BUSIEST:
        out = subprocess.run(
            ["perf", "script", "-i", str(data), "-F", "pid,comm"],
            env=lab["env"],
            capture_output=True,
            text=True,
            check=True,
            timeout=300,
        ).stdout
        rows = Counter(tuple(line.rsplit(None, 1)) for line in out.splitlines() if len(line.split()) >= 2)
        (comm, pid), _ = rows.most_common(1)[0]
        BUSIEST[key] = int(pid), comm.strip()
    return BUSIEST[key]


def _outputs(argv: list[str], tmp: Path, env: dict, stdin: bytes | None = None) -> tuple[bytes, bytes, bytes]:
    argv = argv + ["--meta", str(tmp / "meta.json"), "--leaves", str(tmp / "leaves.tsv")]
    res = subprocess.run(argv, input=stdin, capture_output=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    return res.stdout, (tmp / "leaves.tsv").read_bytes(), (tmp / "meta.json").read_bytes()


OPTION_SETS = {
    "plain": {},
    "per_thread": {"per_thread": True},
    "raw_unknown": {"raw_unknown": True},
    "comm": {"comms": ["worker 2", "busiest"], "per_thread": True},
    "pid": {"pids": "busiest"},
    "pid_raw_names": {"pids": "busiest", "raw_unknown": True, "names": "busiest"},
}


def _option_argv(opts: dict, busiest: tuple[int, str]) -> tuple[list[str], tuple[int, ...]]:
    """The option set as pmuprof-fold arguments ("busiest" stands for the busiest process's pid or name)."""
    pids = (busiest[0],) if opts.get("pids") else ()
    names = {busiest[0]: "server main"} if opts.get("names") else None
    comms = [busiest[1] if c == "busiest" else c for c in opts.get("comms", ())]
    argv = fastfold.fold_argv(
        Path("x"), Path("m"), pids, comms, opts.get("per_thread", False), names, opts.get("raw_unknown", False)
    )[3:]
    return argv, pids


@pytest.mark.parametrize(
    "rec",
    ["pie", "nopie", "stripped", "cpp", "jit", "nocallchain", "two_events", "attach", "system", "system_user", "odd"],
)
def test_perf_script_text_is_reproduced(bins, lab, recordings, rec):
    """--script echoes exactly the text perf script prints (addresses, symbols, offsets, DSOs)."""
    text = _perf_script(lab, recordings[rec])
    res = subprocess.run(
        [str(bins["perfdata"]), "--script", str(recordings[rec])], capture_output=True, env=lab["env"], timeout=300
    )
    assert res.returncode == 0, res.stderr[-500:]
    assert res.stderr == text
    assert text.count(b"\n") > 100


FOLD_CASES = [
    (rec, opts)
    for rec in ("pie", "stripped", "cpp", "jit", "nocallchain", "attach", "system", "system_user", "odd")
    for opts in OPTION_SETS
]


@pytest.mark.parametrize("rec, opts", FOLD_CASES)
def test_folded_outputs_equal_the_perf_script_pipeline(bins, lab, recordings, tmp_path, rec, opts):
    """stdout, leaves.tsv and the meta JSON are pmuprof-fold's bytes (the reader's keys come after)."""
    text = _perf_script(lab, recordings[rec])
    argv, pids = _option_argv(OPTION_SETS[opts], _busiest(lab, recordings[rec]))
    if pids:
        text = _perf_script(lab, recordings[rec], pids)
    ref = _outputs([str(bins["fold"]), *argv], tmp_path, lab["env"], stdin=text)
    got = _outputs([str(bins["perfdata"]), *argv, str(recordings[rec])], tmp_path, lab["env"])
    assert got[0] == ref[0]
    assert got[1] == ref[1]
    assert got[2].startswith(ref[2][:-2] + b', "dsos": [')
    meta = json.loads(got[2])
    assert {k: v for k, v in meta.items() if k not in ("dsos", "exes", "perf_data")} == json.loads(ref[2])
    assert meta["kept"] > 0 and meta["perf_data"]["samples"] >= meta["kept"]
    # each process's own executable, by pid (the processes of the test programs mapped one of theirs)
    exes = {str(p) for p in lab["exes"].values()}
    assert meta["exes"] and any(path in exes for path in meta["exes"].values()), meta["exes"]


def test_labels_cover_what_the_recordings_hold(bins, lab, recordings, tmp_path):
    """The recordings exercise what they are meant to: demangled C++, JIT maps, kernel frames, renames."""

    def folded(rec: str, *opts: str) -> str:
        return _outputs([str(bins["perfdata"]), *opts, str(recordings[rec])], tmp_path, lab["env"])[0].decode()

    assert "pd::engine::Box<unsigned long, 5>::fold" in folded("cpp")
    assert "(anonymous namespace)::hidden" in folded("cpp")
    jit = folded("jit")
    assert "jitted_loop[hot]" in jit and "pd_lib_inner" in jit and "[perf-" in jit
    assert "_[k]" in folded("system") and "_[k]" not in folded("system_user")
    threads = folded("pie", "--per-thread")
    assert "worker 2-" in threads and "w:x</script>-" in threads and "copier-" in threads
    pie_meta = json.loads(_outputs([str(bins["perfdata"]), str(recordings["pie"])], tmp_path, lab["env"])[2])
    exe = next(d for d in pie_meta["dsos"] if d["path"] == str(lab["exes"]["pie"]))
    assert exe["tree_lookups"] >= 1  # pd_inner inside pd_outer: perf's tree shape picks the name
    assert "pd_outer" in folded("pie") or "pd_inner" in folded("pie")
    raw = folded("stripped", "--raw-unknown")
    assert "[stripped@0x" in raw and "pd_middle" not in raw
    assert "pd_middle" in folded("nopie")


def test_the_odd_recording_holds_what_perf_scripts_text_makes_ambiguous(lab, recordings):
    """Each name pd_odd.c is for is sampled: the equality tests above then cover the folder's text fallback."""
    text = _perf_script(lab, recordings["odd"])
    for name in (b"odd (sym+0x", b" padded+0x", b"[unknown]+0x", b"x)(y+0x", b"ends+0x1f+0x", b"lib (open/libpd.so)"):
        assert name in text, name
    assert b"\nline/libpd.so)" in text and b"\n lead " in text and b"\ninlined " in text


def test_recordings_hold_ksymbol_records_before_the_processes_maps(lab, recordings):
    """KSYMBOL images get DSOs of their own: DSOs named afterwards must still be found by name."""
    if lab["bpf"] < 0:
        pytest.skip("cannot load a BPF program here (bpf() refused)")
    dump = subprocess.run(
        ["perf", "report", "-D", "-i", str(recordings["pie"])],
        env=lab["env"],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "PERF_RECORD_KSYMBOL" in dump and "pd_test" in dump


def test_python_client_matches_perf_script_and_lists_dsos(lab, recordings, monkeypatch):
    monkeypatch.setenv("HOME", lab["env"]["HOME"])
    data = recordings["pie"]
    native = perfdata_reader.fold_perf_data_native(data, per_thread=True, inline=False)
    argv = ["perf", "script", "-i", str(data), "-F", FIELDS, "--no-inline"]
    # what perf script's text does not say: each process's executable (the recorded program, by its pid)
    assert str(lab["exes"]["pie"]) in native.result.exes.values(), native.result.exes
    assert replace(native.result, exes={}) == fastfold.fold_perf_script_process(argv, per_thread=True)
    exe = next(d for d in native.dsos if d.path == str(lab["exes"]["pie"]))
    assert exe.matched and exe.build_id and exe.symbols > 5 and exe.found_at
    assert native.samples >= native.result.kept > 100


def test_kcore_copy_in_the_build_id_cache_is_read_like_perf(bins, lab, tmp_path):
    """perf reads kernel symbols the kcore way when a kcore copy validates; so must the reader.

    The copy's text segment is cut inside do_syscall_64, so kcore's segment logic shows in the output.
    """
    home = tmp_path / "home"
    made = subprocess.run(
        ["python3", str(PROGS / "fake_kcore.py"), str(home), "do_syscall_64"], capture_output=True, text=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot build a kcore copy here: {made.stderr.strip()[-200:]}")
    kcore_lab = {**lab, "env": {**lab["env"], "HOME": str(home)}, "tmp": tmp_path}
    data = _record_beside(kcore_lab, "kcore", ["-a", "-g", "-F", "999", "-e", "cpu-clock"])
    text = _perf_script(kcore_lab, data)
    res = subprocess.run(
        [str(bins["perfdata"]), "--script", "--meta", str(tmp_path / "m.json"), str(data)],
        capture_output=True,
        env=kcore_lab["env"],
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-300:]
    assert res.stderr == text
    if os.path.exists("/proc/kcore"):  # perf prefers the running kernel's kcore when it can read it
        return
    kernel = next(d for d in json.loads((tmp_path / "m.json").read_text())["dsos"] if d["path"] == "[kernel.kallsyms]")
    assert "[kernel.kcore]" in kernel["found_at"]
    assert text != _perf_script(lab, data), "the kcore copy changed nothing: the test lost its point"


def _status(bins: dict, lab: dict, data: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(bins["perfdata"]), str(data)], capture_output=True, text=True, env=lab["env"], timeout=120
    )


@pytest.mark.parametrize(
    "mode, why",
    [
        (["--call-graph", "dwarf,4096"], "DWARF call graphs"),
        (["-g", "-z"], "compressed records"),
    ],
)
def test_what_it_cannot_read_exits_3_naming_it(bins, lab, mode, why):
    if (
        "-z" in mode
        and "zstd: [ on"
        not in subprocess.run(["perf", "version", "--build-options"], capture_output=True, text=True).stdout
    ):
        pytest.skip("perf was built without zstd")
    data = _record(lab, why.split()[0].lower(), mode, [str(lab["exes"]["pie"]), "0.3"])
    res = _status(bins, lab, data)
    assert res.returncode == perfdata_reader.UNSUPPORTED
    assert res.stdout == "" and res.stderr.count("\n") == 1 and why in res.stderr
    with pytest.raises(perfdata_reader.PerfdataFallback, match=why):
        perfdata_reader.fold_perf_data_native(data, binary=bins["perfdata"])


def test_a_process_in_another_mount_namespace_is_skipped_unless_asked_for(bins, lab, tmp_path):
    """A container's process sampled by a system-wide recording: reading it would need its namespace's
    files (exit 3, as perf script would read them from there), but --pid of another process reads the
    rest exactly as perf script --pid does (before, that one process made the whole recording fall back)."""
    if not shutil.which("unshare"):
        pytest.skip("unshare is not installed (util-linux)")
    pie, copy = str(lab["exes"]["pie"]), tmp_path / "pd_apart"  # a file only the other namespace maps
    shutil.copy2(pie, copy)
    apart = subprocess.Popen(["unshare", "-m", "--propagation", "private", str(copy), "600"], env=lab["env"])
    ours = subprocess.Popen([pie, "600"], stdout=subprocess.DEVNULL, env=lab["env"])
    try:
        deadline = time.monotonic() + 120  # a hang detector: unshare execs the program at once
        while Path(f"/proc/{apart.pid}/exe").resolve() != copy.resolve():
            assert apart.poll() is None and time.monotonic() < deadline, "unshare did not start the program"
            time.sleep(0.02)
        if os.stat(f"/proc/{apart.pid}/ns/mnt").st_ino == os.stat("/proc/self/ns/mnt").st_ino:
            pytest.skip("unshare -m did not give the program a mount namespace of its own here")
        data = _record(lab, "apart", ["-a", "-g", "-F", "999", "-e", "cpu-clock:u"], ["sleep", "2"])
        for proc in (apart, ours):  # recorded: stopped, not gone (the reads below need apart's namespace)
            proc.send_signal(signal.SIGSTOP)
        whole = _status(bins, lab, data)  # read while it lives (as a capture's report is): its namespace is there
        argv, pids = _option_argv(OPTION_SETS["pid"], (ours.pid, "pd_work"))
        ref = _outputs([str(bins["fold"]), *argv], tmp_path, lab["env"], stdin=_perf_script(lab, data, pids))
        got = _outputs([str(bins["perfdata"]), *argv, str(data)], tmp_path, lab["env"])
    finally:
        for proc in (apart, ours):
            proc.kill()
            proc.wait()
    assert whole.returncode == perfdata_reader.UNSUPPORTED and "another mount namespace" in whole.stderr
    assert got[0] == ref[0] and got[1] == ref[1] and got[0].count(b"\n") >= 3


def test_pipe_mode_exits_3(bins, lab, tmp_path):
    out = tmp_path / "pipe.data"
    with open(out, "wb") as fh:
        subprocess.run(
            ["perf", "record", "-q", "-g", "-o", "-", "--", str(lab["exes"]["pie"]), "0.2"],
            stdout=fh,
            env=lab["env"],
            check=True,
            timeout=60,
        )
    res = _status(bins, lab, out)
    assert res.returncode == perfdata_reader.UNSUPPORTED and "pipe-mode" in res.stderr


def test_truncated_or_corrupt_files_exit_4_with_one_line(bins, lab, recordings, tmp_path):
    whole = recordings["pie"].read_bytes()
    header = bytearray(whole)
    data_off = int.from_bytes(whole[40:48], "little")
    header[data_off + 6 : data_off + 8] = b"\x00\x00"  # the first record claims size 0
    cases = {
        "half": whole[: len(whole) // 2],
        "header_only": whole[:104],
        "magic_zeros": b"PERFILE2" + bytes(200),
        "not_perf": b"hello world\n" * 20,
        "empty": b"",
        "record_size_0": bytes(header),
    }
    for name, blob in cases.items():
        path = tmp_path / f"{name}.data"
        path.write_bytes(blob)
        res = _status(bins, lab, path)
        assert res.returncode == perfdata_reader.CORRUPT, (name, res.stderr)
        assert res.stdout == "" and res.stderr.count("\n") == 1 and "error" in res.stderr, name


def test_build_id_mismatch_leaves_frames_unnamed_like_perf(bins, lab, tmp_path):
    """A binary rebuilt after recording (no cached copy) must not lend its symbols; meta says so."""
    exe = tmp_path / "pd_work"
    src = str(PROGS / "pd_work.c")
    cc = ["gcc", "-O1", "-fno-omit-frame-pointer", "-pthread", src, "-o", str(exe)]
    subprocess.run(cc, check=True)
    data = _record(lab, "mismatch", ["-g", "-F", "2999", "--no-buildid-cache"], [str(exe), "0.4"])
    subprocess.run([*cc, "-DPD_VARIANT=7", "-O2"], check=True)
    text = _perf_script(lab, data)
    ref = _outputs([str(bins["fold"])], tmp_path, lab["env"], stdin=text)
    got = _outputs([str(bins["perfdata"]), str(data)], tmp_path, lab["env"])
    assert got[0] == ref[0] and got[1] == ref[1]
    assert "[pd_work]" in got[0].decode() and "pd_leaf" not in got[0].decode()
    dso = next(d for d in json.loads(got[2])["dsos"] if d["path"] == str(exe))
    assert dso["matched"] is False and dso["found_at"] is None and dso["build_id"]


@pytest.mark.parametrize(
    "rec, opts", [("pie", "plain"), ("attach", "per_thread"), ("system", "comm"), ("nocallchain", "raw_unknown")]
)
def test_time_gives_the_sample_table_of_the_timed_perf_script_pipeline(bins, lab, recordings, tmp_path, rec, opts):
    """--time: every output is pmuprof-fold's on perf script -F ...,time,... (the sample table included)."""
    argv, pids = _option_argv(OPTION_SETS[opts], _busiest(lab, recordings[rec]))
    timed = subprocess.run(
        ["perf", "script", "-i", str(recordings[rec]), "-F", FIELDS.replace("tid,", "tid,time,"), "--no-inline"],
        env=lab["env"],
        capture_output=True,
        check=True,
        timeout=300,
    ).stdout
    ref = _outputs([str(bins["fold"]), *argv, "--samples", str(tmp_path / "ref.tsv")], tmp_path, lab["env"], timed)
    got = _outputs(
        [str(bins["perfdata"]), *argv, "--time", "--samples", str(tmp_path / "got.tsv"), str(recordings[rec])],
        tmp_path,
        lab["env"],
    )
    assert got[0] == ref[0] and got[1] == ref[1]
    assert got[2].startswith(ref[2][:-2] + b', "dsos": [')
    table = (tmp_path / "got.tsv").read_text(encoding="ascii")
    assert table == (tmp_path / "ref.tsv").read_text(encoding="ascii")
    rows = [list(map(int, ln.split("\t"))) for ln in table.splitlines() if not ln.startswith("#")]
    assert sum(r[3] for r in rows) == json.loads(got[2])["kept"]
    stamps = [float(m.group(1)) for m in re.finditer(rb" (\d+\.\d{6}): ", timed)]
    seconds = {int(t) for t in stamps}
    assert {r[2] for r in rows} <= seconds and all(r[2] > 0 for r in rows)
    if max(stamps) - min(stamps) >= 1.0:  # perf may start late on a loaded host: span, not the plan, decides
        assert len({r[2] for r in rows}) >= 2
    assert len(rows) < json.loads(got[2])["kept"]  # a table of distinct entries, not one line per sample


def _ksymbols_with_bytes_after_their_trailer(whole: bytes, extra: bytes) -> tuple[bytes, int]:
    """The recording with `extra` after each KSYMBOL record's sample_id trailer, as kernel 6.18 was seen
    writing them: record sizes, the data size and the feature sections' offsets grow to match. perf writes
    the recording's own KSYMBOL records with a zero trailer; the kernel's carry one like any record it
    writes, so each gets the trailer of the first kernel record (COMM, MMAP2) that has one."""
    data_off, data_size = struct.unpack_from("<QQ", whole, 40)
    end = data_off + data_size
    records, off = [], data_off
    while off < end:
        typ, misc, size = struct.unpack_from("<IHH", whole, off)
        records.append((typ, misc, whole[off : off + size]))
        off += size
    out, n = bytearray(whole[:data_off]), 0
    for typ, misc, rec in records:
        if typ == 17:  # PERF_RECORD_KSYMBOL: header, addr, len, type, flags, NUL-padded name, trailer
            name = (rec.index(b"\0", 24) - 24 + 8) // 8 * 8
            width = len(rec) - 24 - name
            trailer = next(r[-width:] for t, _, r in records if t in (3, 10) and any(r[-width:]))
            rec = struct.pack("<IHH", typ, misc, len(rec) + len(extra)) + rec[8 : 24 + name] + trailer + extra
            n += 1
        out += rec
    grow = len(out) - end
    struct.pack_into("<Q", out, 48, data_size + grow)
    features = int.from_bytes(whole[72:104], "little").bit_count()
    table = bytearray(whole[end : end + 16 * features])
    for i in range(features):
        at, size = struct.unpack_from("<QQ", table, 16 * i)
        struct.pack_into("<QQ", table, 16 * i, at + grow, size)
    return bytes(out + table + whole[end + 16 * features :]), n


def test_ksymbol_records_with_bytes_after_their_trailer_read_like_well_formed_ones(bins, lab, recordings, tmp_path):
    """Such records made perf 6.1 stop and the reader exit 4; they now give the unchanged file's output."""
    good = recordings["two_events"]  # two events: the trailer's id picks the event, so a misread one is fatal
    blob, n = _ksymbols_with_bytes_after_their_trailer(good.read_bytes(), bytes(range(1, 33)))
    assert n > 0
    bad = tmp_path / "long_ksymbols.data"
    bad.write_bytes(blob)
    want = subprocess.run(
        [str(bins["perfdata"]), "--script", str(good)], capture_output=True, env=lab["env"], timeout=300
    )
    got = subprocess.run(
        [str(bins["perfdata"]), "--script", str(bad)], capture_output=True, env=lab["env"], timeout=300
    )
    assert want.returncode == 0 and got.returncode == 0, got.stderr[-300:]
    assert got.stderr == want.stderr and want.stderr.count(b"\n") > 100


def test_ksymbol_records_covering_no_address_are_read_past(bins, lab, recordings, tmp_path):
    """A KSYMBOL of length 0 (or one that wraps) maps no address: the reader once dereferenced the map it had
    just failed to insert (found by the sanitizer tier's mutated recordings). It is skipped, the rest read."""
    whole = bytearray(recordings["two_events"].read_bytes())
    data_off, data_size = struct.unpack_from("<QQ", whole, 40)
    off, n = data_off, 0
    while off < data_off + data_size:
        typ, _, size = struct.unpack_from("<IHH", whole, off)
        if typ == 17:  # PERF_RECORD_KSYMBOL: header, addr (u64), len (u32), ...
            struct.pack_into("<I", whole, off + 16, 0 if n % 2 == 0 else 0xFFFFFFFF)
            if n % 2:
                struct.pack_into("<Q", whole, off + 8, 2**64 - 16)
            n += 1
        off += size
    assert n > 0, "the recording holds no KSYMBOL record"
    bad = tmp_path / "empty_ksymbols.data"
    bad.write_bytes(bytes(whole))
    got = subprocess.run(
        [str(bins["perfdata"]), "--script", str(bad)], capture_output=True, env=lab["env"], timeout=300
    )
    assert got.returncode == 0, got.stderr[-300:]
    assert got.stderr.count(b"\n") > 100


def test_kallsyms_file_names_another_kernels_frames_like_perf(bins, lab, recordings, tmp_path):
    """--kallsyms (a run directory's copy of its boot's text symbols) names the kernel frames of a recording
    whose kernel is not this host's (its build-id changed in the file), as perf script --kallsyms does."""
    out = subprocess.run(
        ["perf", "buildid-list", "-i", str(recordings["system"])], capture_output=True, text=True, env=lab["env"]
    ).stdout
    bid = next((ln.split()[0] for ln in out.splitlines() if ln.endswith("[kernel.kallsyms]")), None)
    if not bid:
        pytest.skip("perf recorded no kernel build-id here")
    data = tmp_path / "elsewhere.data"
    data.write_bytes(recordings["system"].read_bytes().replace(bytes.fromhex(bid), bytes(19) + b"\x01"))
    kallsyms = tmp_path / "kallsyms"
    kallsyms.write_bytes(text_lines(Path("/proc/kallsyms").read_bytes())[0])
    unnamed = subprocess.run(
        [str(bins["perfdata"]), "--script", str(data)], capture_output=True, env=lab["env"], timeout=300
    ).stderr
    assert b"[unknown] ([kernel.kallsyms])" in unnamed, "the changed build-id hides this host's kernel"
    res = subprocess.run(
        [str(bins["perfdata"]), "--script", "--kallsyms", str(kallsyms), str(data)],
        capture_output=True,
        env=lab["env"],
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-300:]
    perf = subprocess.run(
        ["perf", "script", "-i", str(data), "-F", FIELDS, "--no-inline", f"--kallsyms={kallsyms}"],
        env=lab["env"],
        capture_output=True,
        check=True,
        timeout=300,
    ).stdout
    assert res.stderr == perf
    assert b"[unknown] ([kernel.kallsyms])" not in res.stderr
    assert res.stderr == _perf_script(lab, recordings["system"]), "named as on the recording's own kernel"
