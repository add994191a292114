"""The exported folded file is what FlameGraph's difffolded.pl and inferno-diff-folded parse, line by line,
without a warning: each line read here the way those two read it (neither is installed on the test hosts)."""

from __future__ import annotations

import re

from report_fixtures import profile

from pmuprof.model.folded import parse_folded
from pmuprof.report.export import export_bytes

# difffolded.pl (and flamegraph.pl): after chomp, a line is a stack, whitespace, a count (a fraction allowed);
# a line that does not match gives perl's "uninitialized value" warnings and an empty stack in the output.
_DIFFFOLDED = re.compile(r"^(.*)\s+?(\d+(?:\.\d*)?)$")


def difffolded_line(line: str) -> tuple[str, float] | None:
    m = _DIFFFOLDED.match(line.rstrip("\n"))
    return (m.group(1), float(m.group(2))) if m else None


def inferno_line(line: str) -> tuple[str, int] | None:
    """inferno-diff-folded: the count is after the last space (digits, a fraction cut off); else it logs
    'Unable to parse line'."""
    cut = line.rfind(" ")
    if cut < 0:
        return None
    count = line[cut + 1 :].rstrip()
    whole, dot, frac = count.partition(".")
    if not (whole + frac).isdigit() or not whole:
        return None
    return line[:cut].rstrip(), int(whole)


def _lines(data: bytes) -> list[str]:
    return data.decode().splitlines()


def test_default_export_parses_in_both_consumers_with_the_same_stacks():
    prof = profile()
    lines = _lines(export_bytes(prof, "folded"))
    want = {";".join(stack): n for stack, n in prof.stacks.items()}
    assert lines
    for parse in (difffolded_line, inferno_line):
        parsed = [parse(line) for line in lines]
        assert None not in parsed, f"{parse.__name__} would warn on {lines[parsed.index(None)]!r}"
        assert {stack: int(n) for stack, n in parsed} == want


def test_header_lines_are_the_lines_they_warn_on():
    """Why the headers are opt-in: every '# key: value' line is one those tools cannot parse (the guard
    pmuprof adds keeps a header ending in a number from being read as a stack with that count)."""
    prof = profile()
    lines = _lines(export_bytes(prof, "folded", headers=True))
    headers = [line for line in lines if line.startswith("#")]
    assert headers and any(line.rstrip(" #").endswith(str(prof.total)) for line in headers)
    for parse in (difffolded_line, inferno_line):
        assert [line for line in lines if parse(line) is None] == headers
    assert parse_folded(lines)[0] == parse_folded(_lines(export_bytes(prof, "folded")))[0] == dict(prof.stacks)
