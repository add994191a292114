"""Find and load rule files (``rules/<id>.yaml``) into validated Rules."""

from __future__ import annotations

from pathlib import Path

from ..errors import RuleError, UsageError
from ..paths import rules_dir
from .knowledge import KNOWLEDGE_FILES, generic_frames, latch_table, rules_folder, server_features
from .schema import Rule, build_rule
from .yamlload import load_yaml


def rule_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        raise RuleError(f"{directory}: no such rules directory", "set PMUPROF_RULES to a folder of <id>.yaml files")
    return sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())


def load_rule(path: Path) -> Rule:
    return build_rule(load_yaml(path), str(path), path.stem)


def _set_errors(rules: list[Rule], directory: Path) -> list[RuleError]:
    """What is wrong with the rules as a set: an id twice, an ``explains`` of no rule, no rules at all."""
    errors: list[RuleError] = []
    seen: dict[str, str] = {}
    for rule in rules:
        if rule.id in seen:
            errors.append(
                RuleError(f"{rule.path}:1: duplicate rule id '{rule.id}' (also in {seen[rule.id]})", "rename one")
            )
        seen.setdefault(rule.id, rule.path)
    errors += [
        RuleError(f"{rule.path}: explains unknown rule '{other}'", "use the id of a rule file")
        for rule in rules
        for other in rule.explains
        if other not in seen
    ]
    if not rules:
        errors.append(
            RuleError(f"{directory}: no rule files (*.yaml)", "point PMUPROF_RULES at a folder of rule files")
        )
    return errors


def _knowledge_errors(directory: Path) -> list[RuleError]:
    """The knowledge tables every analysis loads from DIRECTORY/knowledge (the latch table, server features; the
    generic frames when the folder has them, else the installed ones are used)."""
    errors = []
    for load in (latch_table, server_features, generic_frames):
        path = directory / "knowledge" / KNOWLEDGE_FILES[load.__name__]
        if load is generic_frames and not path.is_file():
            continue
        try:
            load(path)
        except RuleError as err:
            errors.append(err)
    return errors


def load_rules(directory: Path | None = None) -> tuple[Rule, ...]:
    """All rules of a directory (default: PMUPROF_RULES or the installed rules), sorted by id, with the
    knowledge tables they are evaluated with checked too; the first problem raises."""
    directory = rules_dir() if directory is None else Path(directory)
    with rules_folder(directory):
        rules = [load_rule(p) for p in rule_files(directory)]
    errors = _set_errors(rules, directory) + _knowledge_errors(directory)
    if errors:
        raise errors[0]
    return tuple(sorted(rules, key=lambda r: r.id))


def check_rules(directory: Path) -> tuple[list[Rule], list[RuleError]]:
    """Validate every file; collect errors instead of stopping at the first."""
    good: list[Rule] = []
    bad: list[RuleError] = []
    with rules_folder(directory):  # latch ids as the folder's own table has them
        for path in rule_files(directory):
            try:
                good.append(load_rule(path))
            except RuleError as err:
                bad.append(err)
    return good, bad


def check_set(directory: Path, good: list[Rule]) -> list[RuleError]:
    """What load_rules checks beyond each file (the set, the knowledge tables): with check_rules, exactly
    what an analysis will load."""
    return _set_errors(good, directory) + _knowledge_errors(directory)


def find_rule(rule_id: str, rules: tuple[Rule, ...] | None = None) -> Rule:
    rules = load_rules() if rules is None else rules
    for rule in rules:
        if rule.id == rule_id:
            return rule
    raise UsageError(f"no rule '{rule_id}'", "see `pmuprof rules list` for the ids")
