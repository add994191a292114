"""perf script → folded stacks: FlameGraph conventions, filters, bad and hostile input."""

import io

import pytest

from pmuprof.errors import InputError
from pmuprof.model.folded import header_line, parse_folded, write_folded
from pmuprof.model.perfscript import fold_lines, split_frame

SCRIPT = """mariadbd  100/101
\t    55d0c0123456 ut_delay+0x1c (/usr/sbin/mariadbd)
\t    55d0c0123000 fil_space_get+0x40 (/usr/sbin/mariadbd)
\t    55d0c0120000 [unknown] (/usr/sbin/mariadbd)
\tffffffff81000130 entry_SYSCALL_64+0x76 ([kernel.kallsyms])

mariadbd  100/102
\t    55d0c0123456 ut_delay+0x1c (/usr/sbin/mariadbd)
\t    55d0c0123000 fil_space_get+0x40 (/usr/sbin/mariadbd)
\t    55d0c0120000 [unknown] (/usr/sbin/mariadbd)
\tffffffff81000130 entry_SYSCALL_64+0x76 ([kernel.kallsyms])

sysbench  200/200
\t    1234 main+0x4 (/usr/bin/sysbench)

"""


def test_stacks_are_root_first_with_process_root_and_kernel_suffix():
    res = fold_lines(io.StringIO(SCRIPT), pids=[100])
    assert dict(res.stacks) == {("mariadbd", "entry_SYSCALL_64_[k]", "[mariadbd]", "fil_space_get", "ut_delay"): 2}
    assert res.kept == 2 and res.filtered == 1
    assert res.leaves == {("/usr/sbin/mariadbd", "ut_delay", 0x1C): 2}


def test_processes_left_out_are_named_with_pid_and_samples():
    assert fold_lines(io.StringIO(SCRIPT), comms=["mariadbd"]).left_out == {200: ("sysbench", 1)}
    chosen = fold_lines(io.StringIO(SCRIPT), pids=[200])  # dropped while reading: counted, not named
    assert chosen.left_out == {} and chosen.filtered == 2
    assert fold_lines(io.StringIO(SCRIPT)).left_out == {}


def test_per_thread_roots_and_comm_filter():
    res = fold_lines(io.StringIO(SCRIPT), comms=["mariadbd"], per_thread=True)
    roots = {s[:2] for s in res.stacks}
    assert roots == {("mariadbd", "mariadbd-101"), ("mariadbd", "mariadbd-102")}


def test_two_processes_with_one_name_are_told_apart_by_pid():
    text = SCRIPT.replace("sysbench  200/200", "mariadbd  200/200")
    roots = {s[0] for s in fold_lines(io.StringIO(text)).stacks}
    assert roots == {"mariadbd-100", "mariadbd-200"}


def test_truncated_last_sample_is_dropped_and_said():
    cut = SCRIPT[: SCRIPT.index("sysbench") + 30]
    res = fold_lines(io.StringIO(cut), truncated=True)
    assert res.truncated and res.kept == 2 and "incomplete" in res.warnings()[0]


def test_garbage_lines_are_counted_not_fatal():
    res = fold_lines(io.StringIO("\tnot a frame\n" + SCRIPT + "\t zz\n"))
    assert res.bad_lines == 2 and res.kept == 3


def test_hostile_and_cpp_symbols_survive_as_text():
    line = "\t 10 std::vector<int, A<B>>::operator()(int) const+0x8 (/x/a b (deleted))"
    sym, dso, off = split_frame(line)
    assert sym == "std::vector<int, A<B>>::operator()(int) const" and off == 8 and dso == "/x/a b (deleted)"
    res = fold_lines(io.StringIO("p  1/1\n\t 10 a;b</script>+0x1 (/bin/p)\n\n"))
    assert list(res.stacks) == [("p", "a:b</script>")]


def test_period_never_counts_only_samples():
    text = "p 1/1 [000] 1.0:    1001001 cpu-clock:ppp: \n\t 10 f+0x1 (/bin/p)\n\n"
    res = fold_lines(io.StringIO(text))
    assert res.stacks[("p", "f")] == 1 and res.events["cpu-clock"] == 1


def test_default_format_without_pid_groups_by_comm():
    text = "sh  3826   172.19:    1001001 cpu-clock:ppp: \n\t d4ad7 __GI___execve+0x7 (/lib/libc.so.6)\n\n"
    res = fold_lines(io.StringIO(text))
    assert not res.pid_known and list(res.stacks) == [("sh", "__GI___execve")]


def test_folded_headers_never_parse_as_stacks_and_round_trip():
    assert header_line("version", "0.1").endswith(" #")
    out = io.StringIO()
    write_folded(out, {("a", "b"): 3, ("a",): 1}, {"version": "0.1", "unit": "samples"})
    stacks, headers = parse_folded(io.StringIO(out.getvalue()))
    assert stacks == {("a", "b"): 3, ("a",): 1} and headers == {"version": "0.1", "unit": "samples"}


def test_bad_folded_line_names_the_line():
    with pytest.raises(InputError, match=":2:"):
        parse_folded(["a;b 1", "a;b x"], "f")


def test_samples_without_call_chains_fold_one_frame_each():
    minimal = "            busy 21453/21453      55f414de9135 hot_leaf+0xc (/tmp/busy)\n" * 2
    default = (
        "            busy 21453  1513.535691:    1001001 cpu-clock:ppp:      55f414de9135 hot_leaf+0xc (/tmp/busy)\n"
    )
    res = fold_lines(io.StringIO(minimal))
    assert dict(res.stacks) == {("busy", "hot_leaf"): 2} and res.leaves == {("/tmp/busy", "hot_leaf", 0xC): 2}
    res = fold_lines(io.StringIO(default))
    assert dict(res.stacks) == {("busy", "hot_leaf"): 1} and res.events["cpu-clock"] == 1
