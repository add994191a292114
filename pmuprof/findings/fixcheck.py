"""Which server features a fix uses, and which of them a given server does not have.

Only a fix's sql steps are read as SQL and its my.cnf steps as option lines (shell steps and notes
are not server input); the variables they set, the schemas they read and the statements they use are
looked up in rules/knowledge/server-features.yaml. The engine drops a fix variant that the detected
server would reject; a test holds every rule's fixes to the table for every version its `when` covers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from .knowledge import Feature, server_features
from .steps import FixStep, sql_statements

_SET = re.compile(r"\bSET\s+(?:GLOBAL|PERSIST|PERSIST_ONLY|SESSION|@@global\.)?\s*([a-z_][a-z0-9_]*)\s*=", re.I)
_SET_MORE = re.compile(r",\s*([a-z_][a-z0-9_]*)\s*=", re.I)
_CNF = re.compile(r"^\s*([a-z][a-z0-9_-]*)\s*(?:=|$)", re.I)
_SCHEMA = re.compile(r"\b(sys|performance_schema|information_schema)\.([A-Za-z_][A-Za-z0-9_]*)")
_STATEMENTS = {
    "set_persist": re.compile(r"\bSET\s+PERSIST", re.I),
    "optimizer_hints": re.compile(r"/\*\+"),
    "explain_analyze": re.compile(r"\bEXPLAIN\s+ANALYZE\b", re.I),
    "histogram_update": re.compile(r"\bUPDATE\s+HISTOGRAM\b", re.I),
    "analyze_persistent_for": re.compile(r"\bPERSISTENT\s+FOR\b", re.I),
    "json_arrow_operators": re.compile(r"->>?\s*'\$"),
    "multi_valued_index": re.compile(r"\bCAST\s*\(.*\bAS\s+\w+\s+ARRAY\b", re.I),
}
_LOOSE = re.compile(r"^\s*loose[-_]", re.I | re.M)


def sql_features(text: str, table: Mapping[str, Feature]) -> set[str]:
    """The variables a SQL text sets, the schemas/tables it reads and the statement features it uses."""
    used: set[str] = set()
    statements, rest = sql_statements(text)
    for code in statements + [rest]:
        for m in _SET.finditer(code):
            used.add(m.group(1).lower())
            used.update(x.lower() for x in _SET_MORE.findall(code[m.end() :]))
        for schema, name in _SCHEMA.findall(code):
            used.add(f"{schema}.{name}" if f"{schema}.{name}" in table else schema)
        used.update(name for name, rx in _STATEMENTS.items() if rx.search(code))
    return used


def cnf_features(text: str) -> set[str]:
    """The options a my.cnf text sets (a 'loose-' one is skipped where the server lacks it: never counted)."""
    used = set()
    for line in text.splitlines():
        m = _CNF.match(line.split("#", 1)[0])
        if m and not _LOOSE.match(line):
            used.add(m.group(1).lower().replace("-", "_"))
    return used


def features_used(fix: str | Iterable[FixStep], table: Mapping[str, Feature] | None = None) -> set[str]:
    """Names of the known variables, schemas/tables and statement features a fix uses: of its sql and my.cnf
    steps, or of a text read as SQL (a next step)."""
    table = server_features() if table is None else table
    used: set[str] = set()
    for step in [FixStep("sql", fix)] if isinstance(fix, str) else fix:
        if step.kind == "sql":
            used |= sql_features(step.text, table)
        elif step.kind == "my.cnf":
            used |= cnf_features(step.text)
    return {name for name in used if name in table}


def absent(
    fix: str | Iterable[FixStep],
    family: str | None,
    version: tuple[int, ...],
    table: Mapping[str, Feature] | None = None,
) -> list[str]:
    """The features of the fix that this server does not have (none when the server is unknown)."""
    if family is None or not version:
        return []
    table = server_features() if table is None else table
    return sorted(name for name in features_used(fix, table) if not table[name].exists.hold(family, version))
