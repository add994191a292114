"""pmuprof-fold against the Python Folder, byte for byte, on hostile and broken perf script text."""

from __future__ import annotations

import inspect
import io
import json
import random
import subprocess
from pathlib import Path

import pytest

from pmuprof.tools.native import fold as fastfold
from pmuprof.model.folded import write_folded
from pmuprof.model.perfscript import Folder, FoldResult
from pmuprof.model.rundir import write_leaves
from pmuprof.model.samples import write_tsv
from pmuprof.model.stacks import Stacks

REPO = Path(__file__).resolve().parents[2]
FOLD = REPO / "native" / "build" / "pmuprof-fold"


RAW_UNKNOWN = "raw_unknown" in inspect.signature(Folder).parameters


def python_fold(data: bytes, pids=(), comms=(), per_thread=False, names=None, raw_unknown=False) -> FoldResult:
    """The reference: pmuprof.inputs' way of feeding a perf script text to the Python Folder."""
    folder = Folder(pids, comms, per_thread, names, **({"raw_unknown": True} if raw_unknown else {}))
    last = b""
    for raw in io.BytesIO(data):
        folder.feed(raw.decode("utf-8", "backslashreplace"))
        last = raw
    return folder.finish(truncated=bool(last) and not last.endswith(b"\n"))


def native_fold(
    binary: Path, data: bytes, tmp: Path, pids=(), comms=(), per_thread=False, names=None, raw_unknown=False
):
    argv = fastfold.fold_argv(binary, tmp / "meta.json", pids, comms, per_thread, names, raw_unknown)
    argv += ["--leaves", str(tmp / "l.tsv"), "--samples", str(tmp / "s.tsv")]
    res = subprocess.run(argv, input=data, capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout, (tmp / "l.tsv").read_bytes(), json.loads((tmp / "meta.json").read_text(encoding="utf-8"))


def python_samples_tsv(ref: FoldResult) -> str:
    """samples.tsv as the pipeline writes it for the Python folder's result (rows as stacks.folded lines)."""
    stacks = Stacks.of(ref.stacks)
    out = io.StringIO()
    write_tsv(out, ref.samples, write_folded(io.StringIO(), stacks))
    return out.getvalue()


def assert_same(binary: Path, data: bytes, tmp: Path, **opts) -> FoldResult:
    """C and Python agree on folded bytes, leaves.tsv bytes, counters, names and events."""
    ref = python_fold(data, **opts)
    out = io.StringIO()
    write_folded(out, ref.stacks)
    write_leaves(tmp / "ref.tsv", ref.leaves)
    stacks, leaves, meta = native_fold(binary, data, tmp, **opts)
    assert stacks.decode("utf-8") == out.getvalue()
    assert stacks == out.getvalue().encode("utf-8")
    assert leaves == (tmp / "ref.tsv").read_bytes()
    assert (tmp / "s.tsv").read_text(encoding="ascii") == python_samples_tsv(ref)
    assert ref.samples.total == ref.kept and ref.samples.matches(Stacks.of(ref.stacks))
    assert {k: meta[k] for k in ("kept", "filtered", "bad_lines", "truncated", "pid_known")} == {
        "kept": ref.kept,
        "filtered": ref.filtered,
        "bad_lines": ref.bad_lines,
        "truncated": ref.truncated,
        "pid_known": ref.pid_known,
    }
    assert list(meta["names"].items()) == [(str(p), n) for p, n in ref.names.items()]
    assert list(meta["events"].items()) == list(ref.events.items())
    assert {int(p): tuple(v) for p, v in meta["left_out"].items()} == ref.left_out
    fast = fastfold.fold_stream(io.BytesIO(data), **opts)
    assert fast == ref
    assert fast.samples.as_dict(Stacks.of(fast.stacks)) == ref.samples.as_dict(Stacks.of(ref.stacks))
    return ref


SCRIPT = b"""mariadbd  100/101
\t    55d0c0123456 ut_delay+0x1c (/usr/sbin/mariadbd)
\t    55d0c0123000 fil_space_get+0x40 (/usr/sbin/mariadbd)
\t    55d0c0120000 [unknown] (/usr/sbin/mariadbd)
\tffffffff81000130 entry_SYSCALL_64+0x76 ([kernel.kallsyms])

mariadbd  100/102
\t    55d0c0123456 ut_delay+0x1C (/usr/sbin/mariadbd)
\t    55d0c0123000 fil_space_get+0x040 (/usr/sbin/mariadbd)

sysbench  200/200
\t    1234 main+0x4 (/usr/bin/sysbench)

ib_io_wr  100/103
\t    1234 os_aio_wait+0x4 (/usr/sbin/mariadbd (deleted))

"""

DEFAULT = b"""sh  3826 [001]   172.190001:    1001001 cpu-clock:ppp: \n\t d4ad7 __GI___execve+0x7 (/lib/libc.so.6)
\t ffffffff81000130 entry_SYSCALL_64+0x76 ([kernel.kallsyms])

worker 2  3827 [000]   172.190002:     250000 cycles:u: \n\t d4ad7 work+0x7 (/bin/w)

kworker/0:1 H    12   172.190003:    1 task-clock:  \n\t 1 [unknown] ([unknown])

"""

HOSTILE = (
    b"p;x </script> 7/7 \n"
    b"\t 10 a;b</script><img onerror=alert(1)>+0x1 (/bin/p;q)\n"
    b"\t 11 std::vector<int, A<B>>::operator()(int) const+0x8 (/x/a b (deleted))\n"
    b"\t 12 [unknown] (/opt/my;lib/libx;y.so)\n"
    b"\t 13 [unknown] (/opt/dir/)\n"
    b"\t 14 [unknown]+0x10 ([vdso])\n"
    b"\t 15 f+0xDEADbeef0123456789abcdef00 ([heap])\n"
    b"\t 16 g (/bin/no offset)\n"
    b"\t 17  +0x12 (/bin/blank sym)\n"
    b"\t 18 (/bin/only dso)\n"
    b"\t 19 h+0x1 ([guest.kallsyms])\n"
    b"\t 1a x+0x1 ()\n"
    b"\t 1b y+0x2 (unknown)\n"
    b"\t 1c z+0x3 (a (b) c)\n"
    b"\t 1d w+0x4 (a (b))) \n"
    b"\t 1e v+0x5 (x(y)\n"
    b"\n"
    b"db\xff\xfeworker 99999999999999999999999/00099999999999999999999999 \n"
    b"\t 1 \xed\xa0\x80sur\xc0\xafover\xe2\x82trunc\xe2\x82\xacok+0x1 (/lib/\xff.so)\n"
    b"\t 2 caf\xc3\xa9\xe3\x80\x80wide\xc2\xa0nbsp+0x2 (/lib/x.so)\n"
    b"\t 3 lit\\xff+0x3 (/lib/x.so)\n"
    b"\t 4 lit\xff+0x3 (/lib/x.so)\n"
    b"\t 5 nul\x00byte+0x3 (/lib/x\x00.so)\n"
    b"\t 6 tab\there\x0bvt\x0cff\x1cfs+0x3 (/lib/x.so)\x0b\r\n"
    b"\n"
    b"w\xe3\x80\x80\xd9\xa3 10/11 \n\t 1 a+0x1 (/b)\n\n"
    b"w\xe3\x80\x80\xd9\xa3 10/10 \n\t 1 a+0x2 (/b)\n\n"
    b"crlf 20/20 \r\n\t 1 a+0x1 (/b)\r\n\r\n"
    b"at 3/3 \n\t 1 @zz (/bin/at)\n\t 2 @1f+0x2 (/bin/at)\n\t 0003 [unknown] (/x;y/l;m.so)\n\n"
)


@pytest.mark.parametrize(
    "opts",
    [
        {},
        {"pids": [100]},
        {"comms": ["mariadbd"]},
        {"comms": ["ib_io_wr"]},
        {"per_thread": True},
        {"names": {100: "my server;1"}},
        {"pids": [100, 200], "per_thread": True},
        {"comms": ["sysbench", "nope"]},
    ],
)
def test_minimal_fields_with_filters(fold_bin, tmp_path, opts):
    assert_same(fold_bin, SCRIPT, tmp_path, **opts)


def test_two_processes_sharing_a_name_get_pid_roots(fold_bin, tmp_path):
    ref = assert_same(fold_bin, SCRIPT.replace(b"sysbench  200/200", b"mariadbd  200/200"), tmp_path)
    assert {s[0] for s in ref.stacks} == {"mariadbd-100", "mariadbd-200"}


@pytest.mark.parametrize("opts", [{}, {"per_thread": True}, {"comms": ["sh"]}, {"pids": [-1]}])
def test_default_format_events_and_comms_with_spaces(fold_bin, tmp_path, opts):
    ref = assert_same(fold_bin, DEFAULT, tmp_path, **opts)
    if not opts:
        assert ref.events == {"cpu-clock": 1, "cycles": 1, "task-clock": 1} and not ref.pid_known
        assert ("worker_2", "work") in ref.stacks


@pytest.mark.parametrize("opts", [{}, {"per_thread": True}, {"comms": ["p;x </script>"]}, {"raw_unknown": True}])
def test_hostile_names_and_undecodable_bytes(fold_bin, tmp_path, opts):
    if opts.get("raw_unknown") and not RAW_UNKNOWN:
        pytest.skip("this Folder has no raw_unknown option")
    ref = assert_same(fold_bin, HOSTILE, tmp_path, **opts)
    if not opts:
        assert any(s.count("lit\\xff") == 2 for s in ref.stacks) and ref.bad_lines == 0


NO_CALLCHAIN = (
    b"            perf 123/123 1.5: 1 cpu-clock:ppp:  ffffffff81000130 entry_SYSCALL_64+0x76 ([kernel.kallsyms])\n"
    b"     my thread 2 7/8 2.0:  55d0c0123456 ut_delay+0x1c (/usr/sbin/mariadbd (deleted))\n"
    b"  x 9/9  e: 1 [unknown] (/lib/y.so)\n  z 9/10 \n  q 9/11 : ab f+0x1 (/a) \n"
    b"  u 9/12 e: 2 g+0x1 (/a)\xc2\xa0\n  v 9/13 e: 3 h+0x1 (/a)\x1c\n"
)


@pytest.mark.parametrize("opts", [{}, {"per_thread": True}, {"raw_unknown": True}])
def test_samples_without_call_chains(fold_bin, tmp_path, opts):
    if opts.get("raw_unknown") and not RAW_UNKNOWN:
        pytest.skip("this Folder has no raw_unknown option")
    assert_same(fold_bin, NO_CALLCHAIN, tmp_path, **opts)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n\n  \n",
        b"\t 1 f+0x1 (/x)\n",
        b"garbage\n\t 1 f (/x)\n\n",
        b"p 1/1\n",
        b"p 1/1 \n\n\n",
        b"p 1/1\n\t zz f (x)\n\tnot a frame\n",
    ],
)
def test_empty_and_degenerate_input(fold_bin, tmp_path, data):
    assert_same(fold_bin, data, tmp_path)


@pytest.mark.parametrize("cut", [1, 9, 30, 60, 120, 200, -2, -1])
def test_truncated_input_drops_the_last_sample(fold_bin, tmp_path, cut):
    ref = assert_same(fold_bin, SCRIPT[:cut], tmp_path)
    if cut == -2:
        assert ref.truncated


def test_main_thread_name_and_most_common_name(fold_bin, tmp_path):
    data = (
        b"a 5/6 \n\t 1 f+0x1 (/x)\n\nb 5/7 \n\t 1 f+0x1 (/x)\n\nb 5/8 \n\n"
        b"x 9/9 \n\n y 9/9 \n\nz 9/9 \n\t 1 g+0x1 (/x)\n\n"
    )
    ref = assert_same(fold_bin, data, tmp_path, per_thread=True)
    assert ref.names == {9: "z", 5: "b"}


def test_lines_longer_than_the_read_buffer(fold_bin, tmp_path):
    long = b"s" * (9 << 20)
    assert_same(fold_bin, b"p 1/1 \n\t 1 " + long + b"+0x1 (/x)\n\t 2 g+0x1 (/x)\n\n", tmp_path)


def _random_doc(rng: random.Random) -> bytes:
    comms = [b"mysqld", b"my sqld", b"w 1", b"x;y", b"\xff\xfe", b"caf\xc3\xa9", b"a\tb", b"q"]
    syms = [b"f", b"g;h", b"[unknown]", b"o<p>&", b"\xe2\x82", b"s (x)", b"", b"  t  ", b"u+0x", b"v+0x0"]
    dsos = [b"/bin/a", b"[kernel.kallsyms]", b"[vdso]", b"[unknown]", b"/x/y (deleted)", b"", b"/p;q/r", b"[z]"]
    out = []
    for _ in range(rng.randint(0, 40)):
        r = rng.random()
        if r < 0.25:
            pid, tid = rng.choice([b"1", b"2", b"01", b"3"]), rng.choice([b"1", b"2", b"4", b"3"])
            form = rng.choice([b"%s %s/%s \n", b"%s  %s/%s [000] 1.5: 7 cpu-clock:ppp: \n", b"%s %s 9.1: e: \n"])
            out.append(form.replace(b"%s", rng.choice(comms), 1).replace(b"%s", pid, 1).replace(b"%s", tid, 1))
        elif r < 0.85:
            off = rng.choice([b"", b"+0x1", b"+0xA0", b"+0x000", b"+0xg"])
            out.append(b"\t %x %s%s (%s)\n" % (rng.randint(0, 99), rng.choice(syms), off, rng.choice(dsos)))
        elif r < 0.95:
            out.append(rng.choice([b"\n", b"  \n", b"\x0c\n"]))
        else:
            out.append(rng.choice([b"junk\n", b"\tjunk\n", b" 12 \n", b"\t 1 f (x\n"]))
    doc = b"".join(out)
    return doc[: rng.randint(0, len(doc))] if rng.random() < 0.2 else doc


@pytest.mark.skipif(not RAW_UNKNOWN, reason="this Folder has no raw_unknown option")
@pytest.mark.parametrize("opts", [{"raw_unknown": True}, {"raw_unknown": True, "pids": [-1]}])
def test_raw_unknown_frames_keep_their_address(fold_bin, tmp_path, opts):
    data = (
        SCRIPT + DEFAULT + b"x 5/5 \n\t 00ABc [unknown] (/usr/lib/\xfflib.so)\n\t 0 [unknown] (/)\n"
        b"\t 1 [unknown]+0x3 (relative/x.so)\n\n"
    )
    ref = assert_same(fold_bin, data, tmp_path, **opts)
    if len(opts) == 1:
        assert ("x", "[x.so]", "[@0x0]", "[\\xfflib.so@0xabc]") in ref.stacks


def test_random_documents_agree(fold_bin, tmp_path):
    rng = random.Random(20240501)
    extra = [{"raw_unknown": True}] if RAW_UNKNOWN else []
    for _ in range(150):
        opts = rng.choice([{}, {"per_thread": True}, {"pids": [1]}, {"comms": ["q", "w 1"]}] + extra)
        assert_same(fold_bin, _random_doc(rng), tmp_path, **opts)


def test_missing_binary_falls_back_to_python_and_says_so(monkeypatch, capsys):
    monkeypatch.setenv("PMUPROF_FOLD", "")
    fastfold._say_fallback.cache_clear()
    res = fastfold.fold_stream([line.decode() for line in io.BytesIO(SCRIPT)], pids=[100])
    assert res == python_fold(SCRIPT, pids=[100])
    assert "pmuprof-fold is not built" in capsys.readouterr().err


TIMED = b"""mariadbd 100/101 [000] 7.250000: cpu-clock:
\t55d0c0123456 ut_delay+0x1c (/usr/sbin/mariadbd)
\t55d0c0123000 row_search_mvcc+0x40 (/usr/sbin/mariadbd)

mariadbd 100/102 [001] 7.900000: cpu-clock:
\t55d0c0123456 ut_delay+0x1c (/usr/sbin/mariadbd)
\t55d0c0123000 row_search_mvcc+0x40 (/usr/sbin/mariadbd)

mariadbd 100/101 [000] 8.010000: cpu-clock:
\t55d0c0123456 ut_delay+0x1c (/usr/sbin/mariadbd)
\t55d0c0123000 row_search_mvcc+0x40 (/usr/sbin/mariadbd)

mariadbd 100/101 [000] 00008.500000: cpu-clock:
\t55d0c0123456 ut_delay+0x1c (/usr/sbin/mariadbd)
\t55d0c0123000 row_search_mvcc+0x40 (/usr/sbin/mariadbd)

mariadbd 100/4294967295 [000] 8.600000: cpu-clock:
\t55d0c0124000 btr_cur_search+0x10 (/usr/sbin/mariadbd)

mariadbd 100/101
\t55d0c0124000 btr_cur_search+0x10 (/usr/sbin/mariadbd)
"""


@pytest.mark.parametrize("per_thread", [False, True])
def test_sample_table_keeps_thread_and_second(fold_bin, tmp_path, per_thread):
    """One entry per (stack, tid, second), not per sample; an unknown time or an oversized tid is -1."""
    ref = assert_same(fold_bin, TIMED, tmp_path, per_thread=per_thread)
    table = {(stack[-1], tid, sec): n for (stack, tid, sec), n in ref.samples.as_dict(Stacks.of(ref.stacks)).items()}
    assert table == {
        (_leaf(ref, "ut_delay"), 101, 7): 1,
        (_leaf(ref, "ut_delay"), 102, 7): 1,
        (_leaf(ref, "ut_delay"), 101, 8): 2,
        (_leaf(ref, "btr_cur_search"), -1, 8): 1,
        (_leaf(ref, "btr_cur_search"), 101, -1): 1,
    }
    assert len(ref.samples) == 5 and ref.samples.total == 6


def _leaf(ref: FoldResult, name: str) -> str:
    """The leaf frame label the folder gave function ``name``."""
    return next(s[-1] for s in ref.stacks if s[-1].startswith(name))


def test_sample_table_of_samples_out_of_time_order(fold_bin, tmp_path):
    """A second met again after another (perf script of several files, a clock step) is summed, not split."""
    blocks = TIMED.split(b"\n\n")
    shuffled = b"\n\n".join([blocks[2], blocks[0], blocks[3], blocks[1], blocks[4], blocks[5]])
    ref = assert_same(fold_bin, shuffled, tmp_path)
    assert len(ref.samples) == 5 and ref.samples.total == 6
