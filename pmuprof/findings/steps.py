"""Fix steps: the typed step (sql, my.cnf, shell, note) and the syntax each code kind must keep."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypedDict

STEP_KINDS = ("sql", "my.cnf", "shell", "note")  # code of one language each, or prose
CODE_KINDS = ("sql", "my.cnf", "shell")
# the statements a fix may give (a sql step that starts otherwise is prose in a code block)
SQL_VERBS = (
    "ALTER",
    "ANALYZE",
    "CALL",
    "CHECK",
    "CREATE",
    "DELETE",
    "DO",
    "DROP",
    "EXPLAIN",
    "FLUSH",
    "INSERT",
    "INSTALL",
    "KILL",
    "OPTIMIZE",
    "PURGE",
    "RESET",
    "SELECT",
    "SET",
    "SHOW",
    "UNINSTALL",
    "UPDATE",
    "WITH",
)
KIND_NAMES = {"sql": "SQL", "my.cnf": "my.cnf", "shell": "shell", "note": "note"}
FENCE_LANG = {"sql": "sql", "my.cnf": "ini", "shell": "sh"}  # Markdown fence info strings
_OPTION = re.compile(r"^(?:loose[-_])?[A-Za-z][A-Za-z0-9_-]*\s*(?:=\s*\S.*)?$")
_SECTION = re.compile(r"^\[[A-Za-z0-9_.-]+\]$")


@dataclass(frozen=True)
class FixStep:
    """One step of a fix: code in one language (sql, my.cnf, shell) or prose (note).

    In a rule the text is a template; in a finding it is filled in and ``applies_to`` says which servers
    the variant it came from is for ("" = any)."""

    kind: str  # one of STEP_KINDS
    text: str
    applies_to: str = ""

    @property
    def code(self) -> bool:
        return self.kind in CODE_KINDS

    def to_json(self) -> FixStepJSON:
        return {"kind": self.kind, "text": self.text, "applies_to": self.applies_to}


class FixStepJSON(TypedDict):
    """A fix step in findings.json (and the report's fix blocks)."""

    kind: str
    text: str
    applies_to: str


def sql_statements(text: str) -> tuple[list[str], str]:
    """The statements of a sql step (comments cut, ';' or '\\G' ends each) and what follows the last one."""
    statements, cur, quote, i = [], [], "", 0
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
            cur.append(ch)
        elif text.startswith("--", i) and (i + 2 == len(text) or text[i + 2] in " \t\n"):
            i = text.find("\n", i)
            i = len(text) if i < 0 else i
            continue
        elif ch == ";" or text.startswith("\\G", i):
            statements.append(" ".join("".join(cur).split()))
            cur, i = [], i + (1 if ch == ";" else 2)
            continue
        else:
            cur.append(ch)
        i += 1
    return [s for s in statements if s], " ".join("".join(cur).split())


def sql_problem(text: str) -> str:
    """Why a sql step is not only SQL statements with '--' comments ('' when it is)."""
    statements, rest = sql_statements(text)
    if rest:
        return f"'{rest[:40]}' is not a statement ended by ';' (prose goes in a note step)"
    if not statements:
        return "no statement, only comments (prose goes in a note step)"
    for st in statements:
        if st.split()[0].upper() not in SQL_VERBS:
            return f"'{st[:40]}' does not start with a SQL statement ({', '.join(SQL_VERBS[:6])}, ...)"
    return ""


def cnf_problem(text: str) -> str:
    """Why a my.cnf step is not only [section], 'name = value' and '#' lines under a section ('' when it is)."""
    section, options = False, 0
    for line in (x.strip() for x in text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if _SECTION.match(line):
            section = True
        elif not _OPTION.match(line):
            return f"'{line[:40]}' is not an option line (name = value), a [section] or a # comment"
        elif not section:
            return f"'{line[:40]}' comes before any [section]: say which, e.g. [mysqld]"
        else:
            options += 1
    if not section:
        return "no [section] line: say which, e.g. [mysqld]"
    return "" if options else "no option line (name = value)"


def step_problem(kind: str, text: str) -> str:
    """What is wrong with a step's text for its kind ('' = fine; shell and notes are not parsed)."""
    if kind == "sql":
        return sql_problem(text)
    if kind == "my.cnf":
        return cnf_problem(text)
    return ""


def fence(text: str, lang: str = "") -> str:
    """A fenced Markdown block (with its language) that the text itself cannot close."""
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def step_markdown(step: FixStep) -> list[str]:
    """A step as Markdown lines: code in a fenced block of its language, a note as a paragraph."""
    if step.code:
        return [fence(step.text, FENCE_LANG[step.kind]), ""]
    return [step.text, ""]
