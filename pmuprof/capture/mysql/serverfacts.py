"""The server-facts source: collect_facts in a thread beside perf's window; mysql.json when it stops.

The status interval is the first seconds of the window (at most STATUS_INTERVAL_S, and never past its end:
a saturated server can answer the first reads seconds late, and the capture does not wait out the rest of
the interval for the closing read); a server that cannot
be reached is said once, on the terminal, while the capture goes on, and in run.json when it stops.
"""

from __future__ import annotations

import threading
from typing import Any

from ...model import rundir
from ...model.jsontypes import from_json
from ...model.server import ServerFacts as ServerFactsFile
from ..lifecycle import Context, Part, Source
from .facts import MysqlOptions, collect_facts

STATUS_INTERVAL_S = 5.0  # SHOW GLOBAL STATUS before and after this long (or the whole capture, when shorter)
JOIN_S = 30.0  # server facts still missing this long after perf stopped are given up


class ServerFacts(Source):
    name = "mysql"

    def __init__(self, options: MysqlOptions, pid: int, interval_s: float) -> None:
        self.options, self.pid, self.interval_s = options, pid, interval_s
        self.facts: dict[str, Any] | None = None
        self._thread: threading.Thread | None = None
        self._ended = threading.Event()  # the window has ended: the closing status read is due now

    @classmethod
    def of(cls, ctx: Context) -> ServerFacts | None:
        if not ctx.opts.mysql:
            return None
        options = ctx.opts.mysql_options
        return cls(
            options if isinstance(options, MysqlOptions) else MysqlOptions(),
            ctx.pids[0],
            min(ctx.opts.duration, STATUS_INTERVAL_S),
        )

    def start(self, ctx: Context) -> None:
        ctx.window.one_off_sql.clear()  # before the status source starts: its window opens after these reads
        self._thread = threading.Thread(target=self._collect, args=(ctx,), daemon=True, name="pmuprof-mysql-facts")
        self._thread.start()

    def ready(self, ctx: Context, timeout: float) -> bool:
        """Its one-off reads done (its status interval has begun), or it gave up."""
        return ctx.window.one_off_sql.wait(timeout)

    def _collect(self, ctx: Context) -> None:
        try:
            facts = collect_facts(
                self.options, self.pid, self.interval_s, read=ctx.window.one_off_sql.set, wait=self._ended.wait
            )
        except Exception as err:  # server facts must never fail a capture
            facts = {"reachable": False, "error": f"{type(err).__name__}: {err}"}
        finally:
            ctx.window.one_off_sql.set()
        self.facts = facts
        if not facts.get("reachable", True):  # said once, now, on the terminal; the capture goes on
            ctx.log(
                f"warning: server facts not collected ({facts.get('error') or 'unreachable'}); the "
                "capture goes on — pass --mysql-socket / --defaults-file, or --no-mysql"
            )

    def stop(self, ctx: Context) -> Part:
        self._ended.set()
        if self._thread is not None:
            self._thread.join(timeout=JOIN_S)
        facts = self.facts or {"reachable": False, "error": "server facts timed out"}
        try:
            typed = from_json(ServerFactsFile, facts)
        except TypeError as err:  # a server answer pmuprof did not expect must not lose the capture
            typed = ServerFactsFile(reachable=False, error=f"server facts not understood ({err})")
        rundir.write_typed(ctx.out_dir / rundir.MYSQL, typed)
        if typed.reachable:
            return Part(self.name, files=(rundir.MYSQL,))
        return Part(
            self.name,
            warnings=(f"server facts not collected: {typed.error}",),
            files=(rundir.MYSQL,),
            why_not=typed.error or "unreachable",
        )

    def cleanup(self) -> None:
        self._ended.set()
