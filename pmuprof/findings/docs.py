"""Rule documentation from the rule files: one text for the CLI, the report and docs/rules.md."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..model.server import FAMILY_NAMES
from .kinds import guide, kind_of
from .kinds.base import Matcher
from .knowledge import server_features
from .schema import RESERVED_NAMES, Condition, Guarded, Rule
from .steps import step_markdown

_OPS = {
    "min": "≥",
    "max": "≤",
    "above": ">",
    "below": "<",
    "equals": "=",
    "not_equals": "≠",
    "in": "in",
    "present": "present:",
}

WRITING_RULES = """\
## Writing rules

A rule is one YAML file, `rules/<id>.yaml` (or any folder named by `PMUPROF_RULES`);
`pmuprof rules check DIR` validates a folder and names file:line for every problem.
No code runs from a rule file: matchers come from a fixed set and messages are
templates that can only look up evidence.

| key | what |
|---|---|
| `id`, `title`, `severity` | stable slug (= file name), one-line title (a template like `message`: the ambiguous-latch rule names its latches), highest severity the rule gives (`info`, `warning`, `critical`) |
| `applies_to.servers` | `{mysql: ">=5.7, <8.0.21", percona: "*", mariadb: "<10.6"}`; an unknown server always applies; Percona falls back to the MySQL range |
| `evidence` | named matchers, each one of: KIND_GUIDE; optional `about`; not named like what the engine adds (RESERVED_NAMES) |
| `fire` | `all:` / `any:` lists of conditions that must hold |
| `thresholds` | `metric` (evidence name or list: the largest counts, the smallest with `below: true`), `info`, `warning`, `critical`; `offcpu: {info, warning, critical}` holds the off-CPU metrics of the list to their own levels (threads blocked) and `counters: {...}` the `window` ones (per second, a ratio), the gravest level wins; a stack share (or an `analysis` share such as `skid.pause_share`) above info also needs 0.05 (warning) or 0.25 (critical) threads on the CPU |
| `raise_if` | conditions that raise the severity one level (up to `severity`) |
| `share`, `chain` | the stack evidence that gives the finding's share; the evidence (or list, first with samples wins) that gives its caller chain (default: the share's) |
| `message`, `message_if` | templates: `{name}`, `{name.field}`, `{name:pct}`, `{name:.2f}`; `{chain}`, `{share}` (the share that fired), `{process}`, `{samples}`, `{server}`, `{missing}`; a value that is not known is never printed as a stand-in: its clause in parentheses, its clause (between `; ` or ` — `) or its sentence is left out (in a fix of several lines, its line) |
| `fix` | list of variants `{steps, label, when: {family: range}, if: [conditions]}`; `steps` is a list of one-key steps: `sql:` (statements ended by `;`, `--` comments), `my.cnf:` (a `[section]` line, then `name = value` lines, `#` comments), `shell:` (commands, `#` comments) or `note:` (prose: why, what to look at; it may use the templates); code steps hold only code. A code line that needs a value not known is left out (and a code step left without code); a note loses its clause or sentence |
| `next_steps`, `references`, `doc` | what to capture next; links; `doc: {symptom, why, fix, caveats}` |
| `confirm`, `refute`, `decided_by` | the server's facts that decide the rule: `confirm` / `refute` are lists of `{if: [conditions], text: template}` (a refuting item that holds sets the finding aside at info, never the verdict); a rule no server fact bears on says `decided_by:` what decides it instead (the stacks only, and why). One of them is required. `unconfirmed_max` caps the severity without a confirming fact |
| `threads` | evidence (or `name.field`) that is the threads the cause holds (row-lock waiters from `Innodb_row_lock_time`, the connections running an ALTER): the verdict's weight; else the share's threads on the CPU |
| `min_samples`, `skip_callers` | below `min_samples` (default 200) severity is capped at info; extra frames to skip when naming callers |

Frame patterns are globs matched against the whole name (`*` any text, `?` one
character; C++ argument lists may be left out; kernel frames match without their `_[k]`
suffix) or `re:` regular expressions. `@spin`, `@wait` and `@lock` stand for the
built-in lists of spin-loop, latch-wait and lock-wrapper frames. A condition is
`{evidence: NAME[.field], OP: VALUE}` with OP one of `min`, `max`, `above`, `below`,
`equals`, `not_equals`, `in`, `present`; a fact that is not known never satisfies it.

A fix variant is steps of one kind each, so that code blocks hold only code (a DBA pastes them):

```yaml
fix:
  - when: {mysql: ">=8.0.16", percona: ">=8.0.16"}
    label: MySQL 8.0.16+
    if: [{evidence: cost.slow_pause, equals: true}]
    steps:
      - sql: |
          SET PERSIST innodb_spin_wait_pause_multiplier = {cost.recommended_multiplier};
      - note: PAUSE costs {cost.pause_cycles:.0f} cycles here; measure, and tune from there.
  - steps:
      - note: "Static, needs a restart:"
      - my.cnf: |
          [mysqld]
          innodb_sync_array_size = 16   # default 1
```

Say why in a `note`, not in a code comment that spans lines; a my.cnf step names its section. The
report shows each code step in its own block labelled SQL / my.cnf / shell with the variant's
label, and findings.json gives `fix` as `[{kind, text, applies_to}]`.
""".replace("RESERVED_NAMES", ", ".join(f"`{n}`" for n in RESERVED_NAMES)).replace("KIND_GUIDE", guide())


def _servers(rule: Rule) -> str:
    if not rule.servers:
        return "any server"
    return "; ".join(f"{FAMILY_NAMES[f]} {'(all)' if s.strip() in ('*', '') else s}" for f, s in rule.servers.items())


def _matcher(m: Matcher) -> str:
    return f"- **{m.name}**: {m.about + ' — ' if m.about else ''}{kind_of(m.kind).doc(m.spec)}"


def _condition(c: Condition) -> str:
    return f"{c.evidence} {_OPS[c.op]} {c.value}"


def _thresholds(rule: Rule) -> str:
    th = rule.thresholds
    if th is None:
        return f"fires at {rule.severity} when the conditions hold"
    sign = "≤" if th.below else "≥"

    def levels(bounds: dict[str, float | None]) -> str:
        return ", ".join(f"{lvl} {sign} {b:g}" for lvl, b in bounds.items() if b is not None)

    text = f"{' / '.join(th.metrics)}: " + levels(th.bounds(False))
    text += f"; off-CPU time, in threads blocked on average: {levels(th.bounds(True))}" if th.offcpu else ""
    return text + (f"; the server's counters over the window: {levels(th.bounds('counters'))}" if th.counters else "")


def rule_markdown(rule: Rule) -> str:
    """The full documentation of one rule (used by `rules show`, `rules doc` and the report)."""
    out = [f"## {rule.id}", "", f"**{rule.title}** — up to *{rule.severity}*; applies to {_servers(rule)}.", ""]
    for key in ("symptom", "why", "fix", "caveats"):
        out += [f"**{key.capitalize()}.** {rule.doc[key]}", ""]
    out += ["**Evidence**", ""] + [_matcher(m) for m in rule.evidence] + [""]
    out.append(f"**Thresholds**: {_thresholds(rule)}.")
    if rule.fire_all or rule.fire_any:
        conds = [f"all of ({', '.join(map(_condition, rule.fire_all))})"] if rule.fire_all else []
        conds += [f"any of ({', '.join(map(_condition, rule.fire_any))})"] if rule.fire_any else []
        out.append(f"**Fires when**: {' and '.join(conds)}.")
    if rule.raise_if:
        out.append(f"**Raised one level when**: {', '.join(map(_condition, rule.raise_if))}.")
    out.append("")
    out += _server_facts(rule)
    if rule.fix:
        out += ["**Fix steps** (values in braces are computed from the run)", ""]
        for item in rule.fix:
            when = ", ".join(map(_condition, item.conditions))
            label = item.applies_to
            head = f"{label}, when {when}" if label and when else label or (f"When {when}" if when else "")
            out += ([f"*{head}*:", ""] if head else []) + [line for step in item.steps for line in step_markdown(step)]
    if rule.next_steps:
        out += ["**Next steps**", ""] + [f"- `{s}`" for s in rule.next_steps] + [""]
    if rule.references:
        out += ["**References**", ""] + [f"- {r}" for r in rule.references] + [""]
    return "\n".join(out).rstrip() + "\n"


def _server_facts(rule: Rule) -> list[str]:
    """What confirms and what refutes the rule (each item: its words and its conditions), or what decides it."""
    if rule.decided_by:
        return [f"**Decided by** {rule.decided_by}; no server counter confirms or refutes it.", ""]
    out = []
    for head, items in (("Confirmed by", rule.confirm), ("Refuted by", rule.refute)):
        if items:
            out += [f"**{head}** (the server's facts over the capture)", ""]
            out += [
                f"- {_clean(i.text)} — when {', '.join(map(_condition, i.conditions))}{_reads(rule, i)}" for i in items
            ]
            out.append("")
    counters = sorted({c for m in rule.evidence for c in _counters_of(m)})
    if counters:
        out += ["**Counters it reads**: " + ", ".join(f"[`{c}`](#counter-{c.lower()})" for c in counters) + ".", ""]
    if rule.unconfirmed_max:
        out += [f"Without a confirming fact its severity is at most {rule.unconfirmed_max}.", ""]
    return out


def _counters_of(m: Matcher) -> tuple[str, ...]:
    return tuple(getattr(kind_of(m.kind), "counters", lambda _: ())(m.spec))


def _reads(rule: Rule, item: Guarded) -> str:
    """'; reads `A`, `B`': the status counters (and server variables) an item's conditions read."""
    names: list[str] = []
    for cond in item.conditions:
        m = rule.matcher(cond.evidence.split(".")[0])
        if m is None:
            continue
        found = _counters_of(m) or ((f"variable {m.spec}",) if m.kind == "variable" and isinstance(m.spec, str) else ())
        names += [n for n in found if n not in names]
    return "; reads " + ", ".join(f"`{n}`" if not n.startswith("variable ") else n for n in names) if names else ""


def _clean(text: str) -> str:
    """A confirm / refute text for the docs: its template fields as the evidence names they read."""
    return re.sub(r"\{([a-z_]+)[^}]*\}", r"`\1`", " ".join(text.split()))


def counters_markdown(rules: Iterable[Rule]) -> str:
    """docs/rules.md's "Server counters": each status variable a rule reads, from rules/knowledge/server-features.yaml."""
    used = {c for r in rules for m in r.evidence for c in _counters_of(m)}
    table = server_features()
    out = [COUNTERS_INTRO]
    for name in sorted(used, key=str.lower):
        f = table[name]
        where = "; ".join(
            f"{FAMILY_NAMES[fam]} {'all' if specs == ('*',) else ' or '.join(specs)}"
            for fam, specs in f.exists.ranges.items()
        )
        out += [f'<a id="counter-{name.lower()}"></a>', f"### {name}", ""]
        out += [f"*{f.type or 'counter'}*: {f.about}. Exists in: {where}.", ""]
        out += [f"- checked: {v}" for v in f.verified]
        out += [f"- not checked: {f.unverified}"] if f.unverified else []
        out.append("")
    return "\n".join(out)


COUNTERS_INTRO = """\
## Server counters

A rule reads the server's counters over the capture's window (`window` evidence): a counter's growth over the window
as a rate or a ratio, a gauge's level and growth, and the processlist polls. The window is status.json's polls, once
a second over the whole capture, or for a run without it mysql.json's two reads of the capture's first 5 s.
pmuprof's own statements inside the window are taken out first: status.json says what each of pmuprof's
connections added (read from its own session status before and after), so its status reads (`Com_show_status`)
and on MariaDB its processlist poller's `information_schema.PROCESSLIST` (an on-disk temporary table each) never
read as the load's; for mysql.json an upper bound is taken out instead (`pmuprof/model/wincounters.py`
`FACTS_OWN`, `POLL_OWN`: an idle 10.2.11 and 10.11.19 made 6 to 8 on-disk temporary tables in a 5 s interval).
The healthy incident scenarios check on all three servers that no counter rule fires on pmuprof's own. Every
counter named here was checked in the sources or on a live server of each version listed; what was not is said.
No MySQL server can run here: MySQL rows are checked against the MySQL 5.7.32 and 8.0.39 sources only, and MySQL
8.4 (no source tree or server here) follows 8.0.39 except where its source documentation was read.

How the facts decide a finding: a `confirm` item that holds raises the finding's confidence (high needs one, or
a rule only its own evidence decides); a `refute` item that holds sets the finding aside at info and it is never
the verdict; when the input has none of the facts the items read (a bare perf.data), the finding names them and its
confidence is at most medium. Severity is absolute too: above info a stack share needs its samples to be threads
on the CPU (samples / (frequency × seconds)): 0.05 for a warning, 0.25 for critical; counters are graded on their
own levels (`thresholds.counters`, per second), and the verdict ranks causes by the threads they hold.
"""


def rules_markdown(rules: Iterable[Rule]) -> str:
    """docs/rules.md: an index, every rule, and how to write rules."""
    rules = sorted(rules, key=lambda r: r.id)
    out = [
        "# pmuprof rules",
        "",
        "Generated from `rules/*.yaml` by `pmuprof rules doc > docs/rules.md`; do not edit by hand.",
        "",
        "| id | severity | title |",
        "|---|---|---|",
    ]
    out += [f"| [{r.id}](#{r.id}) | {r.severity} | {r.title} |" for r in rules]
    out.append("")
    for rule in rules:
        out += [rule_markdown(rule)]
    out.append(counters_markdown(rules))
    out.append(WRITING_RULES)
    return "\n".join(out)
