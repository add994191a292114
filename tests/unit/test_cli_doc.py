"""docs/cli.md is what `pmuprof man --markdown` prints: the command reference cannot drift from the CLI."""

from __future__ import annotations

from click.testing import CliRunner

from helpers import REPO
from pmuprof.cli.clidoc import md_text
from pmuprof.cli.exitcodes import exit_codes
from pmuprof.cli.main import COMMANDS, cli

CLI_MD = REPO / "docs" / "cli.md"


def _generated() -> str:
    result = CliRunner().invoke(cli, ["man", "--markdown"])
    assert result.exit_code == 0, result.output
    return result.output


def test_cli_md_is_generated_from_the_cli_and_committed_fresh():
    assert CLI_MD.read_text(encoding="utf-8") == _generated(), (
        "docs/cli.md is stale: python3 -m pmuprof man --markdown > docs/cli.md"
    )


def test_every_command_option_and_exit_code_is_in_it():
    text = _generated()
    for name in COMMANDS:
        assert name == "man" or f"\n## pmuprof {name}\n" in text, name
    for sub in ("install", "status", "remove", "prune"):
        assert f"\n### pmuprof schedule {sub}\n" in text, sub
    assert "| `-h, --mysql-host, --host TEXT` |" in text and "| `--exit-code-on-findings` |" in text
    for code, _ in exit_codes():
        assert f"\n| {code} | " in text, code


def test_help_text_cannot_format_or_hide_itself():
    """Help is plain text: `<comm>` must not become an HTML tag, `*.prom` no emphasis, `|` no new cell."""
    assert md_text("./pmuprof-<comm>-<time>") == "./pmuprof-\\<comm>-\\<time>"
    assert md_text("a *.prom file, [1<=x]") == "a \\*.prom file, \\[1\\<=x\\]"
    assert md_text("fp|dwarf `a|b <c>`", table=True) == "fp\\|dwarf `a\\|b <c>`"  # code spans stay as written


def test_the_synopses_of_usage_md_name_only_real_options():
    """docs/usage.md's short synopses are written by hand: each option in them is one the command has."""
    import re

    usage = (REPO / "docs" / "usage.md").read_text(encoding="utf-8")
    text = _generated().replace("\\", "")
    synopses = re.findall(r"\n## (pmuprof \w+)[^\n]*\n\n```\n(.*?)```", usage, re.S)
    assert len(synopses) >= 7
    for name, block in synopses:
        section = text.split(f"\n## {name}\n", 1)[1].split("\n## ", 1)[0]
        for option in set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", block)):
            assert option in section, (name, option)
