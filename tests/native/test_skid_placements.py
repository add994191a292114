"""Skid correction on compiled programs with known PAUSE / fence / lock placements (gcc, clang; -O0/-O2/-O3)."""

from __future__ import annotations

import pytest

from native_support import PROGS, compile_prog, containing_function, elf_symbols, run_helper

# label right after the instruction under test -> (expected kind, text the instruction starts with, moves?)
LABELS = {
    "lp_after": ("pause", "pause", True),
    "pj_after": ("pause", "pause", True),
    "rn_after": ("pause", "pause", True),  # spelled `rep; nop`
    "pr_after": ("pause", "pause", True),  # PAUSE right before ret
    "amb_after": ("pause", "pause", True),  # also a jump target: moved but flagged ambiguous
    "mf_after": ("fence", "mfence", True),
    "lf_after": ("lfence", "lfence", True),
    "sf_after": ("fence", "sfence", True),
    "lx_after": ("lock", "lock xadd", True),
    "xc_after": ("xchg", "xchg", True),  # its old value is read next: an exchange
    "lo_after": ("lock-fence", "lock or", True),  # lock or $0,(%rsp): GCC's __sync_synchronize()
    "la_after": ("lock-fence", "lock add", True),  # a locked no-op on another stack slot
    "ln_after": ("lock", "lock or", True),  # changes the slot: a locked RMW, not a fence
    "lg_after": ("lock", "lock or", True),  # a no-op on shared data: an atomic op, not a fence
    "xs_after": ("xchg-store", "xchg", True),  # its old value is overwritten unread: a seq_cst store
    "cp_after": ("serialize", "cpuid", True),
    "rd_after": ("rdtsc", "rdtsc", True),
    "plain_after": ("", "add", False),  # an ordinary instruction: nothing moves
}
BUILDS = [
    ("gcc", "-O0", ()),
    ("gcc", "-O2", ()),
    ("gcc", "-O3", ()),
    ("gcc", "-O2", ("-no-pie", "-fno-pie")),
    ("clang", "-O0", ()),
    ("clang", "-O2", ()),
    ("clang", "-O3", ()),
]


@pytest.fixture(scope="module")
def helper(decoding_helper):
    return decoding_helper


@pytest.fixture(scope="module", params=BUILDS, ids=lambda b: f"{b[0]}{b[1]}{''.join(b[2][:1])}")
def build(request, tmp_path_factory, helper):
    compiler, opt, extra = request.param
    exe = tmp_path_factory.mktemp("placements") / f"placements-{compiler}{opt}"
    compile_prog(PROGS / "placements.c", exe, compiler, opt, extra)
    return exe, elf_symbols(exe)


def _samples(syms):
    """One distinct count per label (powers of two) so every move is identifiable."""
    out = []
    for i, label in enumerate(LABELS):
        addr = syms[label][0]
        func, start = containing_function(syms, addr)
        out.append((label, func, addr - start, 1 << i))
    return out


def _by_addr(data):
    return {int(ins["address"], 16): ins for fn in data["functions"] for ins in fn["instructions"]}


def test_samples_after_skid_instructions_move_back_exactly(helper, build):
    exe, syms = build
    samples = _samples(syms)
    stdin = "".join(f"{func}\t{off:x}\t{count}\n" for _, func, off, count in samples)
    rc, data = run_helper(helper, "skid", "--binary", str(exe), stdin=stdin)
    assert rc == 0, data
    assert not any(fn.get("error") for fn in data["functions"]), data["functions"]
    insns = _by_addr(data)
    expected_corrected = {a: 0 for a in insns}
    for label, _func, _off, count in samples:
        addr = syms[label][0]
        kind, text, moves = LABELS[label]
        assert insns[addr]["raw"] == count, label
        pred_addr = max(a for a in insns if a < addr)
        pred = insns[pred_addr]
        assert pred["kind"] == kind, (label, pred)
        assert pred["text"].startswith(text), (label, pred)
        expected_corrected[pred_addr if moves else addr] += count
        # a moved sample that is also a jump target is flagged (amb_after is one by construction; at -O0
        # `while (c) asm("pause")` puts the loop test right after the PAUSE, a real jump target too)
        assert insns[addr]["ambiguous"] == (moves and insns[addr]["branch_target"]), (label, insns[addr])
    assert insns[syms["amb_after"][0]]["ambiguous"]
    assert {a: i["corrected"] for a, i in insns.items()} == expected_corrected
    for fn in data["functions"]:
        assert sum(i["raw"] for i in fn["instructions"]) == sum(i["corrected"] for i in fn["instructions"])
        assert fn["samples"] == sum(i["raw"] for i in fn["instructions"])


def test_address_lines_match_symbol_lines(helper, build):
    exe, syms = build
    samples = _samples(syms)
    by_sym = run_helper(
        helper,
        "skid",
        "--binary",
        str(exe),
        stdin="".join(f"{func}\t{off:x}\t{count}\n" for _, func, off, count in samples),
    )[1]
    by_addr = run_helper(
        helper,
        "skid",
        "--binary",
        str(exe),
        stdin="".join(f"0x{syms[label][0]:x}\t{count}\n" for label, _, _, count in samples),
    )[1]
    a, b = _by_addr(by_sym), _by_addr(by_addr)
    assert {k: (v["raw"], v["corrected"]) for k, v in a.items()} == {
        k: (v["raw"], v["corrected"]) for k, v in b.items()
    }


def test_exact_ip_moves_only_pause_and_lfence(helper, build):
    exe, syms = build
    samples = _samples(syms)
    rc, data = run_helper(
        helper,
        "skid",
        "--binary",
        str(exe),
        "--exact",
        stdin="".join(f"{func}\t{off:x}\t{count}\n" for _, func, off, count in samples),
    )
    assert rc == 0
    insns = _by_addr(data)
    for label in ("mf_after", "lx_after", "xc_after", "cp_after", "lo_after", "xs_after"):
        assert insns[syms[label][0]]["corrected"] >= insns[syms[label][0]]["raw"], label
    for label in ("lp_after", "lf_after"):
        assert insns[syms[label][0]]["corrected"] < insns[syms[label][0]]["raw"], label


def test_sample_on_the_pause_itself_stays(helper, build):
    exe, syms = build
    func, start = containing_function(syms, syms["lp_after"][0])
    rc, data = run_helper(
        helper, "skid", "--binary", str(exe), "--hot-only", stdin=f"{func}\t{syms['lp_after'][0] - start - 2:x}\t5\n"
    )
    assert rc == 0
    (ins,) = [i for i in data["functions"][0]["instructions"] if i["raw"]]
    assert ins["text"] == "pause" and ins["corrected"] == 5 and data["moved"] == 0


def _moved(helper, exe, syms, cases: dict) -> None:
    """One sample count per label (powers of two); each label's samples move onto the instruction its case
    names (text prefix), or stay (None)."""
    lines = []
    for i, label in enumerate(cases):
        func, start = containing_function(syms, syms[label][0])
        lines.append(f"{func}\t{syms[label][0] - start:x}\t{1 << i}\n")
    rc, data = run_helper(helper, "skid", "--binary", str(exe), stdin="".join(lines))
    assert rc == 0, data
    insns = _by_addr(data)
    for i, (label, culprit) in enumerate(cases.items()):
        addr, count = syms[label][0], 1 << i
        assert insns[addr]["raw"] == count
        moved_to = [a for a, ins in insns.items() if ins["corrected"] & count and a != addr]
        if culprit:
            assert insns[addr]["corrected"] & count == 0 and len(moved_to) == 1, (label, moved_to)
            assert insns[moved_to[0]]["text"].startswith(culprit) and moved_to[0] < addr - 1, label
        else:
            assert insns[addr]["corrected"] & count and not moved_to, label


def test_skid_passes_over_nops_after_a_fence_but_not_after_plain_code(helper, build):
    """mfence; nop; X — samples on X belong to the fence. add; nop; X — they stay. Past 2 NOPs — they stay."""
    exe, syms = build
    _moved(helper, exe, syms, {"fn1_after": "mfence", "an1_after": None, "fn3_after": None})


def test_skid_passes_over_one_register_op_after_a_stall(helper, build):
    """pause; add %rax,%rdx; X — X's samples are the pause's (the add retires with it; ut_delay's loop showed
    14 % of its samples there on a loaded VM). pause; add; add; X — they stay. mfence; add; nop; X — moved."""
    exe, syms = build
    _moved(helper, exe, syms, {"pc1_after": "pause", "pc2_after": None, "fcn_after": "mfence"})
