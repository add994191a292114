"""docs/cli.md: the command reference in Markdown, generated from the click definitions like the man page."""

from __future__ import annotations

import re

import click

from .exitcodes import exit_codes

_CODE_SPAN = re.compile(r"(`[^`\n]*`)")


def help_record(param: click.Parameter, ctx: click.Context) -> tuple[str, str] | None:
    """An option's (names, help) as the man page and cli.md show it, the same under every click 8.x:
    arguments have no row (click 8.5 gives them one), and a choice lists its choices as declared
    (click 8.2+ shows a case-insensitive Choice's choices case-folded, 8.1 as declared)."""
    if not isinstance(param, click.Option):
        return None
    record = param.get_help_record(ctx)
    if record is None:
        return None
    names, text = record
    if isinstance(param.type, click.Choice) and param.metavar is None:
        declared = "[" + "|".join(str(choice) for choice in param.type.choices) + "]"
        names = re.sub(r" \[[^\]]*\]", lambda _: " " + declared, names)
    return names, text


def md_text(text: str, table: bool = False) -> str:
    """Help text as Markdown: outside code spans, characters that would format or hide it are escaped."""
    out = []
    for i, part in enumerate(_CODE_SPAN.split(text)):
        if i % 2 == 0:
            part = re.sub(r"([\\*<\[\]])", r"\\\1", part)
        out.append(part.replace("|", "\\|") if table else part)
    return "".join(out)


def _paragraphs(text: str) -> list[str]:
    """Help text as Markdown: \\b blocks stay as written (a code block), other paragraphs flow."""
    out: list[str] = []
    for block in (text or "").strip().split("\n\n"):
        if block.lstrip().startswith("\b"):
            lines = block.split("\n", 1)[1] if "\n" in block else ""
            out += ["```", _dedent(lines.rstrip()), "```", ""]
        elif block.strip():
            out += [md_text(" ".join(block.split())), ""]
    return out


def _dedent(text: str) -> str:
    lines = text.split("\n")
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[indent:] for line in lines)


def subcommand(group: click.Group, ctx: click.Context, name: str) -> click.Command:
    """A command the group lists (``list_commands`` names only commands it has)."""
    cmd = group.get_command(ctx, name)
    if cmd is None:
        raise LookupError(f"{name}: listed but not found")
    return cmd


def _options(cmd: click.Command, ctx: click.Context) -> list[str]:
    rows = [row for param in cmd.get_params(ctx) if (row := help_record(param, ctx)) is not None]
    if not rows:
        return []
    out = ["| option | meaning |", "|---|---|"]
    for names, help_text in rows:
        names = names.replace("|", "\\|")
        out.append(f"| `{names}` | {md_text(' '.join(help_text.split()), table=True)} |")
    return out + [""]


def _command(path: str, cmd: click.Command, parent: click.Context, level: int) -> list[str]:
    ctx = click.Context(cmd, info_name=path.split()[-1], parent=parent)
    usage = " ".join([path, *cmd.collect_usage_pieces(ctx)]).rstrip()
    lines = ["#" * level + f" {path}", "", "```", usage, "```", ""]
    lines += _paragraphs(cmd.help or "")
    lines += _options(cmd, ctx)
    lines += _paragraphs(cmd.epilog or "")
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            lines += _command(f"{path} {name}", subcommand(cmd, ctx, name), ctx, level + 1)
    return lines


def markdown_page(group: click.Group, environment: tuple[tuple[str, str], ...]) -> str:
    """The whole reference; the same definitions give the same bytes."""
    ctx = click.Context(group, info_name="pmuprof")
    names = [name for name in group.list_commands(ctx) if name != "man"]
    lines = [
        "# pmuprof command reference",
        "",
        "Generated from the command definitions by `pmuprof man --markdown > docs/cli.md`; do not edit by",
        "hand. The same text as `pmuprof COMMAND --help` and the man page (`docs/pmuprof.1`). What the",
        "commands do and cost, with OVERHEAD and CAVEATS: [usage.md](usage.md).",
        "",
        " · ".join(f"[{name}](#pmuprof-{name})" for name in names),
        "",
    ]
    lines += _paragraphs("\n\n".join((group.help or "").strip().split("\n\n")))
    for name in names:
        lines += _command(f"pmuprof {name}", subcommand(group, ctx, name), ctx, 2)
    lines += ["## Exit status", "", "| code | meaning |", "|---|---|"]
    lines += [f"| {code} | {md_text(text, table=True)} |" for code, text in exit_codes()]
    lines += ["", "## Environment", "", "| variable | meaning |", "|---|---|"]
    lines += [f"| `{name}` | {md_text(text, table=True)} |" for name, text in environment]
    return "\n".join(lines).rstrip("\n") + "\n"
