"""Which server features a fix text uses, and which of them a given server does not have.

A fix is SQL and my.cnf lines; the variables it sets, the schemas it reads and the statements it
uses are looked up in rules/knowledge/server-features.yaml. The engine drops a fix item that the
detected server would reject; a test holds every rule's fixes to the table for every version its
`when` covers.
"""

from __future__ import annotations

import re
from typing import Mapping

from .knowledge import Feature, server_features

_SET = re.compile(r"\bSET\s+(?:GLOBAL|PERSIST|PERSIST_ONLY|SESSION|@@global\.)?\s*([a-z_][a-z0-9_]*)\s*=", re.I)
_SET_MORE = re.compile(r",\s*([a-z_][a-z0-9_]*)\s*=", re.I)
_CNF = re.compile(r"^\s*(?:#\s*(?:and\s+)?(?:in\s+)?my\.cnf[^:]*:\s*)?(?:\[mysqld\]\s*)?(?:loose[-_])?([a-z][a-z0-9_]*)\s*=",
                  re.I | re.M)
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


def features_used(text: str, table: Mapping[str, Feature] | None = None) -> set[str]:
    """Names of the variables, schemas/tables and statement features a fix text uses (known ones only)."""
    table = server_features() if table is None else table
    used: set[str] = set()
    for line in text.splitlines():
        code = line.split("--", 1)[0]
        for m in _SET.finditer(code):
            used.add(m.group(1).lower())
            used.update(x.lower() for x in _SET_MORE.findall(code[m.end():]))
        m = _CNF.match(code)
        if m and not code.lstrip().upper().startswith(("SET", "SELECT", "WHERE", "AND")) and not _LOOSE.match(code):
            used.add(m.group(1).lower())
    for schema, name in _SCHEMA.findall(text):
        used.add(f"{schema}.{name}" if f"{schema}.{name}" in table else schema)
    used.update(name for name, rx in _STATEMENTS.items() if rx.search(text))
    return {name for name in used if name in table}


def absent(text: str, family: str | None, version: tuple[int, ...],
           table: Mapping[str, Feature] | None = None) -> list[str]:
    """The features of the text that this server does not have (none when the server is unknown)."""
    if family is None or not version:
        return []
    table = server_features() if table is None else table
    return sorted(name for name in features_used(text, table) if not table[name].exists.hold(family, version))
