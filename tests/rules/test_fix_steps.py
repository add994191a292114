"""Fixes are typed steps: every rule's sql steps are SQL statements only, its my.cnf steps option lines under a
section, and the loader refuses anything else (an unknown kind, the old free-text form) naming the file."""

from __future__ import annotations

import pytest
import yaml

from pmuprof.errors import RuleError
from pmuprof.findings.schema import build_rule
from pmuprof.findings.steps import STEP_KINDS, cnf_problem, sql_problem, sql_statements
from pmuprof.findings.yamlload import load_yaml

from .conftest import RULES_DIR

PATHS = sorted(RULES_DIR.glob("*.yaml"))
RULE = """\
id: x
title: t
severity: warning
evidence:
  a: {{variable: innodb_spin_wait_delay}}
fire: {{all: [{{evidence: a, min: 0}}]}}
message: m
doc: {{symptom: s, why: w, fix: f, caveats: c}}
fix:
{fix}
"""


def _steps(path):
    for variant in yaml.safe_load(path.read_text(encoding="utf-8")).get("fix") or []:
        yield from variant["steps"]


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_every_fix_step_is_typed_and_code_holds_only_code(path) -> None:
    wrong = []
    for step in _steps(path):
        kinds = list(step)
        if len(kinds) != 1 or kinds[0] not in STEP_KINDS:
            wrong.append(f"untyped step {step}")
            continue
        kind, text = kinds[0], step[kinds[0]]
        problem = sql_problem(text) if kind == "sql" else cnf_problem(text) if kind == "my.cnf" else ""
        if kind == "sql":
            # prose in a statement: sentences end with '. ' inside it
            problem = problem or next(
                (f"prose in '{st[:50]}'" for st in sql_statements(text)[0] if ". " in st.replace("...", "")), ""
            )
        if kind == "shell" and any(line.lstrip().startswith("--") for line in text.splitlines()):
            problem = "a SQL comment in a shell step"
        if problem:
            wrong.append(f"{kind} step: {problem}")
    assert not wrong, "\n".join(wrong)


def test_the_code_checks_catch_prose_and_stray_lines() -> None:
    assert sql_problem("SET GLOBAL a = 1;   -- why\nSELECT * FROM t\\G") == ""
    assert "prose" in sql_problem("-- reuse connections instead of opening one per request")
    assert "not a statement" in sql_problem("SET GLOBAL a = 1;\nthen restart the server")
    assert "does not start with a SQL statement" in sql_problem("Upgrade to 8.0; SET GLOBAL a = 1;")
    assert "does not start" in sql_problem("# my.cnf [mysqld]: a = 1\nSET GLOBAL a = 1;")  # '#' is not our comment
    assert cnf_problem("[mysqld]\n# static\ninnodb_purge_threads = 1   # default 4\nskip-name-resolve") == ""
    assert "before any [section]" in cnf_problem("innodb_purge_threads = 1")
    assert "not an option line" in cnf_problem("[mysqld]\nSET GLOBAL innodb_purge_threads = 1;")


@pytest.mark.parametrize(
    "fix, error",
    [
        ("  - steps: [{python: 'print(1)'}]", "unknown fix step kind 'python'"),
        ("  - text: SET GLOBAL a = 1;", "the old 'text' form is gone"),
        ("  - SET GLOBAL a = 1;", "the old 'text' form is gone"),
        ("  - label: L", "needs 'steps'"),
        ("  - steps: [{sql: 'Restore the default.'}]", "sql step: 'Restore the default.' is not a statement"),
        (
            "  - steps: [{my.cnf: 'innodb_spin_wait_delay = 4'}]",
            "my.cnf step: 'innodb_spin_wait_delay = 4' comes before",
        ),
        ("  - steps: [{sql: 'SET GLOBAL a = {nope};'}]", "unknown evidence"),
    ],
)
def test_a_bad_fix_is_one_error_naming_the_file(tmp_path, fix, error) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(RULE.format(fix=fix), encoding="utf-8")
    with pytest.raises(RuleError) as err:
        build_rule(load_yaml(path), str(path), "x")
    assert str(path) in str(err.value) and error in str(err.value) and "\n" not in str(err.value)


def test_steps_keep_their_kind_order_and_templates(tmp_path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(
        RULE.format(
            fix="""\
  - when: {mariadb: ">=10.2"}
    label: MariaDB 10.2+
    steps:
      - note: "The delay is {a}: restore the default."
      - sql: |
          SET GLOBAL innodb_spin_wait_delay = 4;   -- dynamic
      - my.cnf: |
          [mysqld]
          innodb_spin_wait_delay = 4
      - shell: systemctl restart mariadb"""
        ),
        encoding="utf-8",
    )
    item = build_rule(load_yaml(path), str(path), "x").fix[0]
    assert [s.kind for s in item.steps] == ["note", "sql", "my.cnf", "shell"]
    assert item.applies_to == "MariaDB 10.2+" and item.steps[2].text == "[mysqld]\ninnodb_spin_wait_delay = 4"


def _variant(tmp_path, steps: str):
    path = tmp_path / "x.yaml"
    path.write_text(RULE.format(fix=f"  - label: L\n    steps:\n{steps}"), encoding="utf-8")
    return build_rule(load_yaml(path), str(path), "x").fix


def test_a_step_whose_value_is_not_known_is_left_out(tmp_path) -> None:
    """Code loses the line that needs the value (a my.cnf step left with its section only goes); a variant
    left without code goes, and the finding's missing list says so."""
    from types import SimpleNamespace

    from pmuprof.findings.engine import _fix

    unknown = SimpleNamespace(family=None, version=(), version_text="")
    fix = _variant(
        tmp_path,
        """\
      - note: "The delay is {a}; restore the default."
      - sql: |
          SET GLOBAL innodb_spin_wait_delay = {a};
          SHOW GLOBAL VARIABLES LIKE 'innodb_spin_wait_delay';
      - my.cnf: |
          [mysqld]
          innodb_spin_wait_delay = {a}""",
    )
    missing: list[str] = []
    steps = _fix(fix, unknown, {}, missing)
    assert [(s.kind, s.text, s.applies_to) for s in steps] == [
        ("note", "Restore the default.", "L"),
        ("sql", "SHOW GLOBAL VARIABLES LIKE 'innodb_spin_wait_delay';", "L"),
    ]
    assert _fix(fix, unknown, {"a": 8}, missing)[2].text == "[mysqld]\ninnodb_spin_wait_delay = 8" and not missing
    only_code = _variant(tmp_path, "      - note: Restore it.\n      - sql: 'SET GLOBAL innodb_spin_wait_delay = {a};'")
    assert _fix(only_code, unknown, {}, missing) == () and missing == [
        "a fix (L) left out: it needs a value not known here"
    ]
