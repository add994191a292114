"""No placeholder reaches the text: every rule's fire fixtures, with their facts dropped one at a time,
rendered as findings.json, Markdown and HTML, never say 'n/a', 'none', 'None', 'nan' or an empty name.

A fact the report does not have (an offline perf.data has no variables, a capture no PAUSE latency)
must leave the sentence that needs it out, or say "unknown"; it must never print a stand-in value.
"""

from __future__ import annotations

import functools
import json
import re
from string import Formatter
from pathlib import Path
from typing import Any
from collections.abc import Iterator

import pytest

from pmuprof.findings.diagnosis import Diagnosis
from pmuprof.findings.engine import diagnose
from pmuprof.findings.template import render
from pmuprof.model.profile import Profile
from pmuprof.report.html import render_report
from pmuprof.report.jsonw import findings_document
from pmuprof.report.markdown import render_markdown
from pmuprof.report.payload import build_payload

from placeholders import finding_texts, placeholders, visible

from .conftest import FIXTURES, RULES_DIR, load_fixture

FIRE = sorted(FIXTURES.glob("*/fire-*.folded"))
NESTED = ("variables", "status", "status_delta", "host", "record")  # their entries go one at a time
# the names rules and matchers read: a nested entry no rule reads (most server variables) is not dropped
READ = " ".join(
    p.read_text(encoding="utf-8")
    for p in [*RULES_DIR.rglob("*.yaml"), *(RULES_DIR.parent / "pmuprof" / "findings").rglob("*.py")]
)


@functools.cache
def _read(name: str) -> bool:
    """Whether a rule or matcher names ``name`` (a server variable or counter): asked once a name, not once a
    fixture (a search of READ's 730 kB for each of a few hundred names, in every fixture)."""
    return name in READ


def _paths(facts: dict[str, Any]) -> Iterator[tuple[str, ...]]:
    """Every fact to drop: each section, each of its keys, and each entry of the nested tables."""
    for top, section in facts.items():
        yield (top,)
        if not isinstance(section, dict):
            continue
        for key, value in section.items():
            yield (top, key)
            if key in NESTED and isinstance(value, dict):
                yield from ((top, key, name) for name in value if _read(name))


def _without(facts: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """The facts without the one at ``path``: the tables on the path are copied, the rest shared (the loader
    only reads them)."""
    out = dict(facts)
    node = out
    for key in path[:-1]:
        node[key] = dict(node[key])
        node = node[key]
    del node[path[-1]]
    return out


def _variants(folded: Path) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """(what was dropped, the facts) for the fixture: all of them, each one dropped, none at all."""
    json_path = folded.with_suffix(".json")
    facts = json.loads(json_path.read_text(encoding="utf-8")) if json_path.is_file() else {}
    yield "nothing", None
    for path in _paths(facts):
        yield ".".join(path), _without(facts, path)
    if facts:
        yield "every fact", {}


def _check(profile: Profile, diagnosis: Diagnosis, pages: bool) -> list[str]:
    """What findings.json says, and with ``pages`` the Markdown and HTML reports too."""
    bad = [
        f"findings.json {where}: ...{p}..."
        for where, text in finding_texts(findings_document(profile, diagnosis))
        for p in placeholders(text)
    ]
    if pages:
        payload = build_payload(profile, diagnosis, max_flame_nodes=500)
        bad += [f"report.md: ...{p}..." for p in placeholders(render_markdown(payload))]
        bad += [f"report.html: ...{p}..." for p in placeholders(visible(render_report(payload)))]
    return bad


@pytest.mark.parametrize("folded", FIRE, ids=[f"{p.parent.name}-{p.stem}" for p in FIRE])
def test_no_placeholder_with_facts_missing_one_at_a_time(folded: Path, rules) -> None:
    """All facts and none are checked with every rule in all three outputs; one fact dropped at a time,
    with the rules that fire on the fixture (the suite's time: the pages show the same finding texts)."""
    bad: list[str] = []
    some = rules
    for dropped, facts in _variants(folded):  # "nothing" first: its findings name the rules that fire
        whole = dropped in ("nothing", "every fact")
        profile = load_fixture(folded, facts)[0]
        diagnosis = diagnose(profile, rules if whole else some)
        if dropped == "nothing":
            fired = {f.rule for f in diagnosis.findings} | {folded.parent.name}
            some = tuple(r for r in rules if r.id in fired)
        bad += [f"[{dropped} dropped] {b}" for b in _check(profile, diagnosis, whole)]
    assert not bad, "\n".join(dict.fromkeys(bad))


def test_the_grep_catches_what_the_issue_saw() -> None:
    """The placeholders issue 22 found in real reports are caught; the real values they look like are not."""
    for text in (
        "the none finding gives its server-specific fix",
        "rounds (n/a/s)",
        "innodb_buffer_pool_instances = n/a",
        "waits are for: none.",
        "lasts None µs",
        "{cost.delay}",
        "- Host: ?, kernel ?, hardware PMU no",
    ):
        assert placeholders(text), text
    for text in (
        "SET GLOBAL innodb_change_buffering = 'none';",
        "# my.cnf [mysqld]: innodb_change_buffering = none",
        "none of the threads waited",
        "the lock_sys finding gives its fix",
        "is the page_cleaner thread near 100% of a core?",
        "(is purge keeping up?)",
    ):
        assert not placeholders(text), text


def _templates(rule) -> Iterator[tuple[str, str, bool]]:
    """Every template of a rule (and whether it is code), also those whose conditions no fixture meets."""
    yield "message", rule.message, False
    yield from (("message_if", g.text, False) for g in rule.message_if)
    yield from (("confirm", c.text, False) for c in rule.confirm + rule.refute)
    yield from ((f"fix {s.kind} step", s.text, s.code) for f in rule.fix for s in f.steps)
    yield from (("next_steps", s, False) for s in rule.next_steps)


def _fields(text: str) -> list[str]:
    return [name for _, name, _, _ in Formatter().parse(text) if name]


def test_every_template_reads_without_each_of_its_values(rules) -> None:
    """Each template of each rule, rendered with every value it names but one (then with none), leaves
    out what needs the missing one: no placeholder, no dangling '=' or empty parentheses."""
    bad = []
    for rule in rules:
        for where, text, code in _templates(rule):
            names = _fields(text)
            for gone in [*names, None]:
                values: dict[str, Any] = {}
                for name in names:
                    if name != gone and gone is not None:  # {x} and {x.y} both: x is {"value": .., "y": ..}
                        node = values
                        for part in name.split("."):
                            node = node.setdefault(part, {})
                        node["value"] = 0.25
                out = render(text, values, code)
                found = placeholders(out) + re.findall(r".{0,40}\w\s=\s*(?:[;,)]|\.?$|\.\s).{0,20}", out, re.M)
                bad += [f"{rule.id} {where} without {gone or 'any value'}: ...{p}..." for p in found]
    assert not bad, "\n".join(bad)
