"""Kernel code no kallsyms here names is counted apart from stripped binaries, and said with its cause."""

from __future__ import annotations

from pmuprof.analysis import quality
from pmuprof.analysis.kernel import kernel_warnings
from pmuprof.model.analysis import StackQuality
from pmuprof.model.labels import is_unresolved_kernel
from pmuprof.model.run import Run
from pmuprof.model.stacks import Stacks
from pmuprof.tools.elf import note_build_id


def test_labels() -> None:
    assert is_unresolved_kernel("[kernel.kallsyms]") and is_unresolved_kernel("[kernel.kallsyms@0xffffffff8100]")
    assert is_unresolved_kernel("[guest.kernel.kallsyms]")
    for other in ("[mariadbd]", "[mariadbd+0x1a0 pause]", "do_syscall_64_[k]", "[unknown]", "[vdso]", "kernel_x"):
        assert not is_unresolved_kernel(other), other


def test_quality_counts_unresolved_kernel_apart_from_unnamed() -> None:
    stacks = Stacks.of(
        {
            ("mysqld", "start_thread", "do_command", "__libc_recv", "[kernel.kallsyms]"): 60,
            ("mysqld", "start_thread", "do_command", "[mysqld]"): 10,
            ("mysqld", "start_thread", "do_command", "row_search_mvcc"): 30,
        }
    )
    q = quality.for_process(stacks, "mysqld", Run())
    assert q.unresolved_kernel_share == 0.6
    assert q.unnamed_share == 0.1 and q.unnamed_binaries == ("mysqld",)


def _q(share: float) -> StackQuality:
    return StackQuality(process="mariadbd", samples=100, unresolved_kernel_share=share)


def test_another_boot_is_said_with_both_kernels() -> None:
    (line,) = kernel_warnings((_q(0.02), _q(0.35)), "aa" * 20, "6.1.0-18-amd64", "bb" * 20, "6.12.9")
    assert line.startswith("kernel frames of another boot: 35% of mariadbd samples")
    assert "6.1.0-18-amd64, build-id aaaaaaaaaaaa" in line and "6.12.9, build-id bbbbbbbbbbbb" in line
    assert "not a stripped binary" in line and "perf archive" in line


def test_same_kernel_means_hidden_kallsyms() -> None:
    (line,) = kernel_warnings((_q(0.5),), "aa" * 20, "6.1.0", "aa" * 20, "6.1.0")
    assert "kptr_restrict" in line and "another boot" not in line


def test_quiet_below_one_percent_and_without_quality() -> None:
    assert kernel_warnings((_q(0.009),), "aa" * 20, "6.1", "bb" * 20, "6.2") == ()
    assert kernel_warnings((), None, "", None, "") == ()


def test_note_build_id_reads_kernel_notes_layout() -> None:
    xen = (4).to_bytes(4, "little") + (8).to_bytes(4, "little") + (6).to_bytes(4, "little") + b"Xen\0" + b"\1" * 8
    gnu = (
        (4).to_bytes(4, "little") + (20).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"GNU\0" + bytes(range(20))
    )
    assert note_build_id(xen + gnu) == bytes(range(20)).hex()
    assert note_build_id(xen) is None and note_build_id(b"") is None


def test_the_fix_follows_what_the_capture_kept() -> None:
    from pmuprof.model.run import KernelSymbols

    args = ((_q(0.4),), "aa" * 20, "6.1.0", "bb" * 20, "6.12.9")
    (missing,) = kernel_warnings(*args, kept=KernelSymbols(file="kallsyms.gz", build_id="aa" * 20))
    assert "kallsyms.gz (kept by the capture) is missing or damaged" in missing
    (not_kept,) = kernel_warnings(*args, kept=KernelSymbols(why_not="/proc/kallsyms shows no addresses"))
    assert "kept no kernel symbols (/proc/kallsyms shows no addresses): capture as root" in not_kept
    (bare,) = kernel_warnings(*args)
    assert "re-report the run directory pmuprof capture wrote" in bare
