"""``pmuprof rules``: list, show, document and check the diagnosis rules."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..errors import RuleError
from ..findings.docs import rule_markdown, rules_markdown
from ..findings.loader import check_rules, check_set, find_rule, load_rules
from ..paths import rules_dir

EPILOG = """\b
Examples:
  pmuprof rules list                          # every rule: id, severity, title
  pmuprof rules show innodb-spin-wait         # symptom, why, fix, caveats of one rule
  pmuprof rules doc > docs/rules.md           # regenerate the rules reference
  pmuprof rules check ./my-rules              # validate your own rule files (file:line errors)
  PMUPROF_RULES=./my-rules pmuprof report RUN # report with your rules instead of the built-in ones
"""


@click.group("rules", epilog=EPILOG)
def COMMAND() -> None:
    """List, show, document and check the diagnosis rules (rules/*.yaml or $PMUPROF_RULES)."""


@COMMAND.command("list", epilog=EPILOG)
@click.option("--json", "as_json", is_flag=True, help="Print [{id, severity, title}] as JSON.")
def list_cmd(as_json: bool) -> None:
    """One line per rule: id, highest severity, title."""
    rules = load_rules()
    if as_json:
        click.echo(json.dumps([{"id": r.id, "severity": r.severity, "title": r.title} for r in rules], indent=2))
        return
    width = max(len(r.id) for r in rules)
    for rule in rules:
        click.echo(f"{rule.id:<{width}}  {rule.severity:<8}  {rule.title}")


@COMMAND.command("show", epilog=EPILOG)
@click.argument("rule_id")
def show_cmd(rule_id: str) -> None:
    """The full documentation of one rule (the same text as docs/rules.md)."""
    click.echo(rule_markdown(find_rule(rule_id)), nl=False)


@COMMAND.command("doc", epilog=EPILOG)
def doc_cmd() -> None:
    """Markdown for docs/rules.md, generated from the rule files."""
    click.echo(rules_markdown(load_rules()), nl=False)


@COMMAND.command("check", epilog=EPILOG)
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
def check_cmd(directory: Path | None) -> None:
    """Validate every rule file in DIRECTORY (default: the rules in use); exit 7 on errors."""
    directory = directory or rules_dir()
    good, bad = check_rules(directory)
    whole = check_set(directory, good)
    for err in bad + whole:
        click.echo(f"error: {err}", err=True)
    click.echo(
        f"{directory}: {len(good)} valid, {len(bad)} invalid"
        + (f"; {len(whole)} problem(s) with the set or its knowledge tables" if whole else "")
    )
    if bad or whole:
        raise RuleError(
            f"{len(bad)} invalid rule file(s), {len(whole)} other problem(s) in {directory}", "fix the errors above"
        )
