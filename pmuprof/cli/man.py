"""`pmuprof man`: the pmuprof(1) man page, generated from the click definitions (docs/pmuprof.1)."""

from __future__ import annotations

import click

from .. import __version__
from .clidoc import help_record, subcommand
from .exitcodes import exit_codes

ENVIRONMENT = (
    ("PMUPROF_PERF", "the perf executable to run (default: perf on PATH)"),
    ("PMUPROF_RULES", "a directory of rule files used instead of the built-in rules"),
    ("PMUPROF_HELPER", "the pmuprof-helper executable (empty: run without it)"),
    ("PMUPROF_FOLD", "the pmuprof-fold executable (empty: fold in Python)"),
    ("PMUPROF_TEXTFILE", "default of --textfile (capture, watch)"),
    ("PMUPROF_NOTIFY_CMD", "default of --notify-cmd (capture, watch)"),
    ("PMUPROF_MY_PRINT_DEFAULTS", "the my_print_defaults to resolve option files with (empty: pmuprof's own parser)"),
    ("PMUPROF_CACHE", "where the demo workload is built and compiled templates kept (default ~/.cache/pmuprof)"),
    ("PMUPROF_STAGE_CPU_S", "CPU seconds of pmuprof's own work a report stage may use before it stops (default 900)"),
    ("DEBUGINFOD_URLS", "debuginfod servers asked for binaries and debug files by build-id"),
    ("MYSQL_PWD", "the server password when neither an option file nor --mysql-password-env gives one"),
    ("MYSQL_HOME", "a directory whose my.cnf is read between the global and the user option files"),
)


def roff(text: str) -> str:
    """Text safe in a roff line: backslashes escaped, hyphens kept literal, no line starting a request."""
    out = text.replace("\\", "\\e").replace("-", "\\-")
    out = "".join(ch if ord(ch) < 128 else f"\\[u{ord(ch):04X}]" for ch in out)
    return "\n".join("\\&" + line if line[:1] in (".", "'") else line for line in out.split("\n"))


def _paragraphs(text: str) -> list[str]:
    """Help text as roff: \\b blocks stay as written (.nf), other paragraphs flow."""
    out = []
    for block in (text or "").strip().split("\n\n"):
        if block.lstrip().startswith("\b"):
            lines = block.split("\n", 1)[1] if "\n" in block else ""
            out += [".PP", ".nf", roff(lines.rstrip()), ".fi"]
        elif block.strip():
            out += [".PP", roff(" ".join(block.split()))]
    return out


def _option(param: click.Parameter, ctx: click.Context) -> list[str]:
    record = help_record(param, ctx)
    if record is None:
        return []
    names, help_text = record
    return [".TP", f"\\fB{roff(names)}\\fR", roff(" ".join(help_text.split()))]


def _command(path: str, cmd: click.Command, parent: click.Context) -> list[str]:
    ctx = click.Context(cmd, info_name=path.split()[-1], parent=parent)
    lines = [f".SS {roff(path)}", ".nf", roff(" ".join([path, *cmd.collect_usage_pieces(ctx)])), ".fi"]
    lines += _paragraphs(cmd.help or "")
    for param in cmd.get_params(ctx):
        lines += _option(param, ctx)
    lines += _paragraphs(cmd.epilog or "")
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            lines += _command(f"{path} {name}", subcommand(cmd, ctx, name), ctx)
    return lines


def man_page(group: click.Group) -> str:
    """The whole page; the same definitions give the same bytes (no date in it)."""
    ctx = click.Context(group, info_name="pmuprof")
    summary = (group.help or "").strip().split("\n")[0]
    lines = [
        f'.TH PMUPROF 1 "" "pmuprof {__version__}" "User Commands"',
        ".SH NAME",
        f"pmuprof \\- {roff(summary)}",
        ".SH SYNOPSIS",
        ".B pmuprof",
        "\\fICOMMAND\\fR [\\fIOPTIONS\\fR]",
        ".SH DESCRIPTION",
    ]
    lines += _paragraphs("\n\n".join((group.help or "").strip().split("\n\n")[1:]))
    lines += [
        ".PP",
        "Help for one command: \\fBpmuprof COMMAND \\-\\-help\\fR. \\fB\\-h\\fR is the MySQL host "
        "wherever the server options are, as for \\fBmysql\\fR(1) and \\fBpt\\-stalk\\fR(1).",
        ".SH COMMANDS",
    ]
    for name in group.list_commands(ctx):
        if name != "man":
            lines += _command(f"pmuprof {name}", subcommand(group, ctx, name), ctx)
    lines += [".SH EXIT STATUS"]
    for code, text in exit_codes():
        lines += [".TP", f"\\fB{code}\\fR", roff(text)]
    lines += [".SH ENVIRONMENT"]
    for name, text in ENVIRONMENT:
        lines += [".TP", f"\\fB{name}\\fR", roff(text)]
    lines += [
        ".SH SEE ALSO",
        "\\fBperf\\fR(1), \\fBperf\\-record\\fR(1), \\fBmysql\\fR(1), \\fBmy_print_defaults\\fR(1), "
        "\\fBpt\\-stalk\\fR(1), \\fBsystemd.timer\\fR(5), \\fBnode_exporter\\fR(1)",
    ]
    return "\n".join(lines) + "\n"


@click.command("man")
@click.option("--markdown", is_flag=True, help="The same reference as Markdown (docs/cli.md).")
@click.pass_context
def man_cmd(ctx: click.Context, markdown: bool) -> None:
    """Print the pmuprof(1) man page (roff); `pmuprof man | man -l -` reads it."""
    root = ctx.find_root().command
    assert isinstance(root, click.Group)  # pmuprof's command line is a group
    if markdown:
        from .clidoc import markdown_page

        click.echo(markdown_page(root, ENVIRONMENT), nl=False)
    else:
        click.echo(man_page(root), nl=False)


COMMAND = man_cmd
