"""The processlist over the capture's window: in which polls threads were in each state or ran each statement.

Built from processlist.tsv (the poller's rows, model/processlist.py) or, for a run without it, mysql.json's one
processlist snapshot; the ``window`` rules read it beside the server's counters (model/wincounters.py) to say
which polls saw a thread ``altering table`` or running ``ALTER TABLE``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Iterable, Mapping

from .processlist import Polled


@dataclass(frozen=True)
class Activity:
    """The polls, and per state (``altering table``) or statement's first words, upper-case (``ALTER TABLE
    SBTEST2``), the poll (second) of every thread seen so: one entry per thread per poll."""

    polls: int = 0
    states: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    statements: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    source: str = ""

    @classmethod
    def of_polled(cls, polled: Polled, polls: int | None = None) -> Activity:
        """From processlist.tsv; ``polls``: the seconds the poller measured (its series), else those with rows."""
        seconds = polled.seconds.tolist()
        states = [polled.value("state", i) for i in range(len(polled))]
        kinds = [statement_kind(polled.value("digest", i)) for i in range(len(polled))]
        n = max(polls or 0, len(set(seconds)))
        return cls(n, _by_key(seconds, states), _by_key(seconds, kinds), f"processlist.tsv, {n} polls")

    @classmethod
    def of_snapshot(cls, states: Mapping[str, int]) -> Activity:
        """From mysql.json's one processlist snapshot (states only)."""
        return cls(1, {s: (0,) * int(n) for s, n in states.items() if n}, {}, "mysql.json processlist, one poll")

    def share(self, names: Iterable[str], table: str = "states") -> tuple[float, float]:
        """(share of polls with a thread in one of ``names``, such threads a poll on average); a name matches
        whole, case-insensitively, or as a prefix when it ends in ``*``."""
        rows = self.states if table == "states" else self.statements
        wanted = [n.lower() for n in names]
        hits = [v for k, v in rows.items() if any(_matches(k.lower(), w) for w in wanted)]
        if not self.polls:
            return 0.0, 0.0
        polls = len({second for hit in hits for second in hit})
        return min(1.0, polls / self.polls), sum(len(hit) for hit in hits) / self.polls


def _matches(key: str, wanted: str) -> bool:
    return key.startswith(wanted[:-1]) if wanted.endswith("*") else key == wanted


def statement_kind(digest: str) -> str:
    """A statement's first three words, upper-case: 'ALTER TABLE SBTEST2', 'SELECT DISTINCT C'."""
    return " ".join(digest.split()[:3]).upper()


def _by_key(seconds: list[int], keys: list[str]) -> dict[str, tuple[int, ...]]:
    out: dict[str, list[int]] = {}
    for second, key in zip(seconds, keys):
        if key:
            out.setdefault(key, []).append(second)
    return {k: tuple(sorted(v)) for k, v in sorted(out.items())}
