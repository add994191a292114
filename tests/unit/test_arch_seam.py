"""What pmuprof assumes of x86-64 is in one file per language (issue 36, item 3): native/arch/x86_64.h and
pmuprof/arch.py, plus the helper's decoder, x86-64 by nature and marked by its file names (*x86_64*).
Another architecture stops the native build with one #error line and a capture with one error line."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import REPO
from pmuprof import arch
from pmuprof.cli.main import main
from pmuprof.errors import UsageError

ARCH_FILES = ("native/arch/", "pmuprof/arch.py")
CODE = re.compile(r"\.(py|c|h|S|cpp|sh)$|(^|/)Makefile$")
HEX = r"(?:\\x|0x)?"
PATTERNS = {  # what an x86-64 assumption looks like in code, comments and test programs alike
    "x86-64 register": re.compile(
        r"(?<![\w$.'])%?(?:r[abcd]x|r[sd]i|r[bs]p|rip|r(?:8|9|1[0-5])[dwb]?|e[abcd]x|e[sd]i|e[bs]p|eip)(?![\w'])"
    ),
    "register constant": re.compile(r"\bPERF_REG_X86_\w+|\bREG_R(?:[ABCD]X|[SD]I|[BS]P|IP)\b|\bstruct\s+pt_regs\s*\{"),
    "syscall number": re.compile(r"\bsyscall\s*\(\s*\d|#\s*define\s+__NR_\w+\s+\d|\b(?:SYS|NR)_\w+\s*=\s*\d"),
    "prologue bytes": re.compile(  # push %rbp; mov %rsp,%rbp and endbr64, as bytes in any spelling
        rf"(?i){HEX}55[\s,]*{HEX}48[\s,]*{HEX}89[\s,]*{HEX}e5|{HEX}f3[\s,]*{HEX}0f[\s,]*{HEX}1e[\s,]*{HEX}fa"
    ),
    "arch selection": re.compile(
        r"__TARGET_ARCH_\w+|\bEM_X86_64\b|\bmachine\s*==\s*62\b|x86intrin\.h|<cpuid\.h>|__rdtsc|__builtin_ia32_\w+|_mm_pause"
    ),
}
# Test programs and tests that exercise x86-64 code itself (a port gives each a twin or a skip), by file
# name so a test's move between folders keeps its entry; each must still hold what it is listed for.
X86_64_FIXTURES = {
    "placements.c": "PAUSE, fence and locked-op placements in assembly for the skid corrector",
    "fence_forms_live.c": "the x86 full-fence forms GCC emits, under perf",
    "inline_chain.c": "a PAUSE loop (__builtin_ia32_pause) inlined through helpers",
    "pd_work.c": "a function with a frame pointer written in assembly",
    "pd_jit.c": "JIT code as x86-64 machine code bytes",
    "nofp_lib.c": "a library leaf that keeps data in the frame-pointer register",
    "test_capture_live.py": "a leaf with a frame written in assembly",
    "test_demo_workload.py": "the demo's PAUSE and MFENCE as objdump prints them",
    "test_fence_live.py": "the fence forms the skid corrector tells apart",
    "test_skid_placements.py": "the skid corrector's x86-64 cases",
    "test_skid_live.py": "the skid corrector on x86-64 loops",
    "report_fixtures.py": "an x86-64 instruction listing as the helper reports it",
}
# Lines the code held before the seam (main at 68aebfc): each must be found, or the patterns prove nothing.
BEFORE = (
    "#define REG_RBP 6",
    "#define PD_REG_SP 7 /* x86-64 perf_regs: PERF_REG_X86_SP, its bit in sample_regs_user */",
    "struct pt_regs {\n    unsigned long bp;",
    "-D__TARGET_ARCH_x86",
    "    if (eh.e_machine != EM_X86_64)",
    "#include <x86intrin.h>",
    "    t0 = __rdtsc();",
    '_PROLOGUES = (b"\\x55\\x48\\x89\\xe5", b"\\xf3\\x0f\\x1e\\xfa\\x55\\x48\\x89\\xe5")',
    '"machine": "x86_64" if elf.machine == 62 else f"e_machine={elf.machine}",',
    "    return libc.syscall(321, 5, buf, 128)",
    "the leaf's rbp was no frame",
    "mfence, `lock or $0,(%rsp)`, xchg as a store",
)


def _hits(text: str) -> list[tuple[int, str, str]]:
    return sorted(
        (text.count("\n", 0, m.start()) + 1, kind, m.group(0))
        for kind, pat in PATTERNS.items()
        for m in pat.finditer(text)
    )


def _code_files() -> list[str]:
    if not (REPO / ".git").exists() or not shutil.which("git"):
        pytest.skip("needs the git checkout")
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard"], capture_output=True, text=True, check=True
    ).stdout.split()
    return [f for f in listed if CODE.search(f) and not f.startswith("docs/") and (REPO / f).is_file()]


def test_the_patterns_find_what_the_code_held_before_the_seam():
    assert all(_hits(line) for line in BEFORE), [line for line in BEFORE if not _hits(line)]
    for path in ("native/arch/x86_64.h", "pmuprof/arch.py"):  # and what the arch files hold now
        kinds = {kind for _, kind, _ in _hits((REPO / path).read_text())}
        assert {"x86-64 register", "prologue bytes" if path.endswith(".py") else "register constant"} <= kinds


def test_x86_64_assumptions_are_only_in_the_arch_files():
    found, fixtures, me = [], {}, str(Path(__file__).resolve().relative_to(REPO))
    for rel in _code_files():
        if rel.startswith(ARCH_FILES) or "x86_64" in Path(rel).name or rel == me:
            continue
        hits = _hits((REPO / rel).read_text(errors="replace"))
        if rel.startswith("tests/") and Path(rel).name in X86_64_FIXTURES:
            fixtures[Path(rel).name] = hits
            continue
        found += [f"{rel}:{line}: {kind} {text!r}" for line, kind, text in hits]
    assert found == [], "move it into native/arch/x86_64.h or pmuprof/arch.py:\n" + "\n".join(found)
    stale = sorted(name for name in X86_64_FIXTURES if not fixtures.get(name))
    assert stale == [], f"listed as x86-64 fixtures but hold nothing x86-64 (or are gone): {stale}"


def test_an_unknown_architecture_stops_the_native_build_with_one_line(tmp_path):
    clang = shutil.which("clang")
    if not clang:
        pytest.skip("needs clang (apt-get install clang)")
    src = tmp_path / "probe.c"
    src.write_text('#include "arch/arch.h"\nint probe;\n')

    def build(*target: str) -> subprocess.CompletedProcess:
        cmd = [clang, *target, "-fsyntax-only", "-I", str(REPO / "native"), str(src)]
        return subprocess.run(cmd, capture_output=True, text=True)

    for target in (["--target=aarch64-linux-gnu"], ["--target=riscv64-linux-gnu"], ["-target", "bpf"]):
        res = build(*target)
        errors = [line for line in res.stderr.splitlines() if "error:" in line]
        assert res.returncode != 0 and len(errors) == 1, (target, res.stderr)
        assert "pmuprof: no native/arch/ header for this architecture" in errors[0]
    assert build("--target=x86_64-linux-gnu").returncode == 0
    assert build("-target", "bpf", "-DPMUPROF_ARCH_x86_64=1").returncode == 0


def test_a_capture_on_another_architecture_is_one_line_and_touches_nothing(monkeypatch, tmp_path, capsys):
    with pytest.raises(UsageError, match="captures on x86_64 only; this host is aarch64"):
        arch.check_capture("aarch64")
    arch.check_capture("x86_64")
    real = os.uname()
    fake = os.uname_result((real.sysname, real.nodename, real.release, real.version, "aarch64"))
    monkeypatch.setattr(arch.os, "uname", lambda: fake)
    out = tmp_path / "run"
    assert main(["record", "-p", str(os.getpid()), "-d", "1", "-o", str(out)]) == UsageError.exit_code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pmuprof: error: pmuprof captures on x86_64 only"), err
    assert "pmuprof report" in err[0] and not out.exists()


def test_the_elf_machine_is_named_from_the_table():
    assert arch.elf_machine_name(62) == "x86_64" and arch.elf_machine_name(183) == "e_machine=183"
