"""Ground truth for inline attribution: binutils' addr2line's inline chain at each address.

``inline_chains(binary, vaddrs)`` runs ``addr2line -a -i -f -C -e BINARY`` once, the addresses on its
standard input, and returns for each address the function names of its inline chain, innermost
first: ``[inlined callee, ..., the real (out-of-line) function]``. Addresses are file virtual
addresses (as in ``nm`` / the ELF program headers), not runtime ones; for a return address from a
callchain pass ``ret - 1`` so the call instruction itself is looked up.

Names are as ``addr2line -C`` prints them: plain C names, C++ names with their parameter lists
(``mtr_t::s_lock(char const*, unsigned int, sux_lock<ssux_lock>*)``) and a template function's
return type first (``buf_block_t* trx_undo_assign_low<false>(trx_t*, ...)``); perf prints the same
chain without parameter lists. An address addr2line cannot place answers ``["??"]``. Needs DWARF
in the binary (or its debug file found by addr2line's own rules); without it addr2line gives only
the symbol, a chain of one.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def inline_chains(
    binary: Path, vaddrs: list[int], addr2line: str | None = None, timeout: float = 600.0
) -> dict[int, list[str]]:
    """Each address's inline chain (function names, innermost first), from one addr2line call.

    ``-a`` makes addr2line echo each address before its answer ("0x..." line), so the output is split
    on those echoes: every other line pair after an echo is (function, file:line) of one level.
    """
    tool = addr2line or shutil.which("addr2line")
    if tool is None:
        raise FileNotFoundError("addr2line not installed (apt-get install binutils)")
    if not vaddrs:
        return {}
    unique = list(dict.fromkeys(vaddrs))
    stdin = "".join(f"{a:#x}\n" for a in unique)
    proc = subprocess.run(
        [tool, "-a", "-i", "-f", "-C", "-e", str(binary)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
        errors="replace",
    )
    chains: dict[int, list[str]] = {}
    current: list[str] | None = None
    lines, i, k = proc.stdout.splitlines(), 0, 0
    while i < len(lines):
        if k < len(unique) and lines[i].startswith("0x") and int(lines[i], 16) == unique[k]:
            current = chains[unique[k]] = []
            i, k = i + 1, k + 1
        elif current is None:
            raise ValueError(f"addr2line output does not start with an address: {lines[i]!r}")
        else:
            current.append(lines[i])  # a function name; the line after it is its file:line
            i += 2
    if len(chains) != len(unique):
        raise ValueError(f"addr2line answered {len(chains)} of {len(unique)} addresses")
    return chains
