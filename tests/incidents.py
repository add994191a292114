"""Ground truth of a server incident: the server's own counters, sampled on a connection of their own during a
load and corrected for the sampler's own statements, judged at the rules' thresholds (docs/rules.md).

    with incidents.Sampler(server) as sampler:   # SHOW GLOBAL STATUS + SHOW FULL PROCESSLIST every 0.5 s
        sampler.wait(3.0)                         # at least 3 s of samples
    truth = sampler.truth()                       # rates, gauges, derived values, a verdict per incident kind

The thresholds are the rules' (docs/rules.md, tests/incident_rules.py): each incident kind is ``confirmed`` (its
confirming counters crossed), ``refuted`` (its refuting counters held) or ``neither``. Counter names per version
(docs/rules.md "Server counters"): Innodb_history_list_length exists from MariaDB 10.5, so 10.2 reads
INNODB_METRICS' trx_rseg_history_len; Table_open_cache_* do not exist in 10.2.11, which is judged by
Opened_tables and Open_tables. What the sampler sends adds to the counters it reads (each SHOW STATUS and
information_schema query makes a temporary table; measured again by tests/integration/test_incidents_*.py's idle
case): those increments are subtracted, so a rate is the load's own. The sampler runs before pmuprof's capture,
never during it, so pmuprof's own statements are not in the truth.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from incident_rules import Verdict, derive, verdicts

INTERVAL_S = 0.5

# What each statement the sampler sends adds to the global counters it reads (measured on each server; the same
# on 10.2.11, 10.11 and 11.4.5). Not kept: Handler_tmp_write (one per row of the SHOW) and Qcache_not_cached
# (the INNODB_METRICS read counts there only while the query cache is on).
STATUS_SQL = "SHOW GLOBAL STATUS"
METRIC_SQL = "SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len'"
PROCESSLIST_SQL = "SHOW FULL PROCESSLIST"
FOOTPRINT: dict[str, dict[str, int]] = {
    STATUS_SQL: {"Created_tmp_tables": 1, "Com_show_status": 1, "Questions": 1, "Queries": 1},
    METRIC_SQL: {"Created_tmp_tables": 1, "Com_select": 1, "Questions": 1, "Queries": 1},
    PROCESSLIST_SQL: {"Com_show_processlist": 1, "Questions": 1, "Queries": 1},
}

# Counters read as per-second rates over the window, corrected for the sampler's own statements.
COUNTERS = (
    "Questions",
    "Com_select",
    "Com_insert",
    "Com_update",
    "Com_delete",
    "Com_replace",
    "Com_commit",
    "Com_alter_table",
    "Com_optimize",
    "Com_create_index",
    "Created_tmp_tables",
    "Created_tmp_disk_tables",
    "Created_tmp_files",
    "Sort_merge_passes",
    "Sort_scan",
    "Sort_range",
    "Qcache_hits",
    "Qcache_inserts",
    "Qcache_lowmem_prunes",
    "Table_open_cache_hits",
    "Table_open_cache_misses",
    "Table_open_cache_overflows",
    "Opened_tables",
    "Opened_table_definitions",
    "Connections",
    "Threads_created",
    "Ssl_accepts",
    "Ssl_finished_accepts",
    "Aborted_connects",
    "Innodb_row_lock_waits",
    "Innodb_row_lock_time",
    "Handler_write",
    "Com_show_status",  # the sampler's own (corrected to zero; the idle test checks it)
    "Com_show_processlist",
    "server_cpu_s",  # not a status variable: the server process's CPU seconds (/proc/PID/stat utime + stime)
)
# Levels read per sample (min / median / max).
GAUGES = ("Threads_running", "Threads_connected", "Open_tables", "Innodb_row_lock_current_waits", "history_length")
KEPT = frozenset(COUNTERS + GAUGES)  # what a Truth keeps of each sample
VARIABLES = (
    "version",
    "query_cache_type",
    "query_cache_size",
    "table_open_cache",
    "table_open_cache_instances",
    "have_ssl",
    "thread_cache_size",
    "innodb_flush_log_at_trx_commit",
)
ALTER_PREFIXES = ("ALTER", "OPTIMIZE", "CREATE INDEX", "CREATE UNIQUE INDEX", "DROP INDEX")
MDL_WAIT = "Waiting for table metadata lock"
NOTES = (
    "rates are corrected for the sampler's own statements (SHOW GLOBAL STATUS, SHOW FULL PROCESSLIST and, "
    "without Innodb_history_list_length, one INNODB_METRICS read per sample)",
)


@dataclass(frozen=True)
class Sample:
    """One sampling round: monotonic time, the numeric status less the sampler's own increments, processlist counts."""

    t: float
    status: Mapping[str, int]
    alter: int  # connections running ALTER / OPTIMIZE / CREATE INDEX
    mdl_waiters: int  # connections waiting for a table metadata lock


@dataclass(frozen=True)
class Truth:
    """What the counters say about one window (JSON: ``to_json``)."""

    server: str
    seconds: float
    n_samples: int
    variables: Mapping[str, str]
    rates: Mapping[str, float]
    gauges: Mapping[str, Mapping[str, float]]
    derived: Mapping[str, Any]
    verdicts: Mapping[str, Verdict]
    window: tuple[Sample, ...] = ()  # the samples, status cut to COUNTERS and GAUGES: judge() again from JSON
    notes: tuple[str, ...] = NOTES

    def confirmed(self) -> list[str]:
        return sorted(kind for kind, v in self.verdicts.items() if v.state == "confirmed")

    def to_json(self) -> dict:
        return asdict(self)


def samples_from_json(rows: list[dict]) -> list[Sample]:
    """Truth.to_json()'s ``window`` back as Sample objects."""
    return [Sample(float(r["t"]), dict(r["status"]), int(r["alter"]), int(r["mdl_waiters"])) for r in rows]


def _number(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def cpu_seconds(pid: int) -> float:
    """The process's user + system CPU seconds so far (fields 14 and 15 of /proc/PID/stat, in clock ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def connect(server: Any) -> Any:
    """A root connection over the server's private socket (tests/mariadb.py's MariaDB)."""
    import pymysql

    return pymysql.connect(
        unix_socket=str(server.socket), user="root", password="", autocommit=True, connect_timeout=10
    )


def read_variables(conn: Any) -> dict[str, str]:
    """The GLOBAL values of VARIABLES (a name the server lacks is left out)."""
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL VARIABLES")
        rows = dict(cur.fetchall())
    return {name: str(rows[name]) for name in VARIABLES if name in rows}


def oldest_transaction(conn: Any) -> dict[str, Any]:
    """The oldest InnoDB transaction: age in seconds, isolation, state, thread (empty when none)."""
    sql = (
        "SELECT TIMESTAMPDIFF(SECOND, trx_started, NOW()), trx_isolation_level, trx_state, trx_mysql_thread_id "
        "FROM information_schema.INNODB_TRX ORDER BY trx_started LIMIT 1"
    )
    with conn.cursor() as cur:
        cur.execute(sql)
        row = cur.fetchone()
    return dict(zip(("age_s", "isolation", "state", "thread"), row)) if row else {}


class Sampler:
    """Samples the server every ``interval`` seconds on its own root connection, from __enter__ to __exit__."""

    def __init__(self, server: Any, interval: float = INTERVAL_S) -> None:
        self.server, self.interval = server, interval
        self.samples: list[Sample] = []
        self.variables: dict[str, str] = {}
        self.oldest: dict[str, Any] = {}
        self.error: BaseException | None = None
        self._own: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="incident-sampler", daemon=True)
        self._conn: Any = None
        self._metric = False

    def __enter__(self) -> Sampler:
        self._conn = connect(self.server)
        self.variables = read_variables(self._conn)
        with self._conn.cursor() as cur:
            cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_history_list_length'")
            self._metric = cur.fetchone() is None  # MariaDB < 10.5: INNODB_METRICS (on by default everywhere)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)
        try:
            if self.error is None:
                self.oldest = oldest_transaction(self._conn)  # after the last sample: nothing to correct
        finally:
            self._conn.close()

    def _send(self, sql: str) -> list[tuple]:
        with self._conn.cursor() as cur:
            cur.execute(sql)
            rows = list(cur.fetchall())
        for name, n in FOOTPRINT[sql].items():
            self._own[name] = self._own.get(name, 0) + n
        return rows

    def _round(self) -> Sample:
        status = {k: n for k, v in self._send(STATUS_SQL) if (n := _number(v)) is not None}
        t = time.monotonic()
        status["server_cpu_s"] = cpu_seconds(self.server.pid)
        if self._metric:
            status["history_length"] = int(self._send(METRIC_SQL)[0][0])
        else:
            status["history_length"] = status.get("Innodb_history_list_length", 0)
        rows = self._send(PROCESSLIST_SQL)  # Id, User, Host, db, Command, Time, State, Info, ...
        info = [str(r[7] or "").lstrip().upper() for r in rows if r[4] == "Query"]
        alter = sum(1 for text in info if text.startswith(ALTER_PREFIXES))
        mdl = sum(1 for r in rows if str(r[6] or "").startswith(MDL_WAIT))
        corrected = {k: status[k] - n for k, n in self._own.items() if k in status}
        return Sample(t, {**status, **corrected}, alter, mdl)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                started = time.monotonic()
                self.samples.append(self._round())
                self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))
        except BaseException as err:  # noqa: BLE001 - raised in the test's thread by wait()/truth()
            self.error = err

    def wait(self, seconds: float, timeout: float = 120.0) -> None:
        """Until the samples span ``seconds`` (a loaded host may answer slowly; ``timeout`` catches a hang)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.error is not None:
                raise RuntimeError(f"sampler failed: {self.error!r}") from self.error
            if len(self.samples) >= 2 and self.samples[-1].t - self.samples[0].t >= seconds:
                return
            assert time.monotonic() < deadline, f"sampler did not span {seconds} s in {timeout} s"
            time.sleep(0.05)

    def truth(self) -> Truth:
        if self.error is not None:
            raise RuntimeError(f"sampler failed: {self.error!r}") from self.error
        return judge(list(self.samples), self.variables, self.oldest)


def _rate(samples: list[Sample], name: str) -> float:
    first, last = samples[0].status, samples[-1].status
    if name not in first or name not in last:
        return float("nan")
    return (last[name] - first[name]) / (samples[-1].t - samples[0].t)


def _levels(samples: list[Sample], name: str) -> dict[str, float]:
    values = sorted(s.status[name] for s in samples if name in s.status)
    if not values:
        return {}
    return {"min": values[0], "median": values[len(values) // 2], "max": values[-1]}


def judge(samples: list[Sample], variables: Mapping[str, str], oldest: Mapping[str, Any] | None = None) -> Truth:
    """The truth of a window of at least two samples."""
    if len(samples) < 2:
        raise ValueError(f"{len(samples)} sample(s): a window needs two")
    seconds = samples[-1].t - samples[0].t
    rates = {name: round(r, 3) for name in COUNTERS if (r := _rate(samples, name)) == r}
    gauges = {name: lv for name in GAUGES if (lv := _levels(samples, name))}
    derived = derive(samples, rates, gauges, variables, dict(oldest or {}), seconds)
    return Truth(
        variables.get("version", ""),
        round(seconds, 3),
        len(samples),
        dict(variables),
        rates,
        gauges,
        derived,
        verdicts(derived, rates, variables),
        tuple(Sample(s.t, {k: s.status[k] for k in KEPT if k in s.status}, s.alter, s.mdl_waiters) for s in samples),
    )
