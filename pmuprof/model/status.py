"""status.json: the server's own counters once a second over the capture, and its InnoDB state at both ends.

Written by the status source (capture/mysql/status.py) on a connection proven to reach the target pid; read
by every report, on any host (rundir.read_status), into ``ServerStatus``; the findings stage and the report
read it through ``model.wincounters.WindowCounters``. Each poll is one read of the global status (and of a
few INNODB_METRICS counters), stamped like every per-second source with the whole second of CLOCK_MONOTONIC
at its midpoint (model/series.py). ``values`` keeps, per poll, every numeric counter that changed during
the capture; ``first`` and ``last`` keep the whole status of the first and last poll as the server printed
it. ``own`` says what pmuprof's own connections added to the per-session counters meanwhile (they are
subtracted by the window view). Statement text is kept only as a digest (literals replaced by ``?``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from collections.abc import Mapping

from .series import CLOCK
from .server import ServerVersion

STATUS_FORMAT = 1

# Counters that are levels, not totals: their "rate" means nothing; the window reads their values.
LEVEL_PREFIXES = (
    "Threads_running",
    "Threads_connected",
    "Threads_cached",
    "Threadpool_",
    "Open_",
    "Innodb_buffer_pool_pages_data",
    "Innodb_buffer_pool_pages_dirty",
    "Innodb_buffer_pool_pages_free",
    "Innodb_buffer_pool_pages_misc",
    "Innodb_buffer_pool_pages_total",
    "Innodb_buffer_pool_pages_old",
    "Innodb_buffer_pool_pages_latched",
    "Innodb_buffer_pool_bytes_",
    "Innodb_page_size",
    "Innodb_row_lock_current_waits",
    "Innodb_row_lock_time_avg",
    "Innodb_row_lock_time_max",
    "Innodb_num_open_files",
    "Innodb_history_list_length",
    "Innodb_max_trx_id",
    "Innodb_lsn_",
    "Innodb_checkpoint_",
    "Innodb_mem_",
    "Memory_used",
    "Max_used_connections",
    "Qcache_free",
    "Qcache_queries_in_cache",
    "Qcache_total_blocks",
    "Slave_open_temp_tables",
    "Uptime",
    "Innodb_buffer_pool_load_",
    "Innodb_buffer_pool_dump_",
    "Innodb_buffer_pool_resize_",
    "Innodb_data_pending_",
    "Innodb_os_log_pending_",
    "Innodb_undo_truncations",
    "Rpl_",
    "Slaves_",
    "Tc_log_",
    "Innodb_page_compression_saved",
    "Innodb_defragment_",
    "Innodb_onlineddl_",
    "Innodb_secondary_index_triggered_cluster_reads_avoided",
    "Prepared_stmt_count",
    "Table_open_cache_active_instances",
    "Last_query_cost",
    "history_length",  # HISTORY below
    # INNODB_METRICS values (not counters) the source reads
    "trx_rseg_history_len",
    "lock_threads_waiting",
)
# Counters a connection's own statements add to (the per-session status): what ``own`` measures.
PER_SESSION = re.compile(
    r"^(?:Com_|Handler_|Select_|Sort_)\w+$|^(?:Created_tmp_tables|Created_tmp_disk_tables|Questions|Bytes_received|"
    r"Bytes_sent|Rows_read|Rows_sent|Rows_tmp_read|Empty_queries)$",
    re.I,  # information_schema.SESSION_STATUS spells them upper-case
)
# The history list length: the status variable (MariaDB 10.5+), else InnoDB's own metric (every version).
HISTORY_NAMES = ("Innodb_history_list_length", "trx_rseg_history_len")


@dataclass(frozen=True)
class Key:
    """A counter the report shows per second and the capture keeps as series ``status.<name>``."""

    name: str
    unit: str
    about: str
    show: bool = False  # drawn under the seconds strip (the others: the report's server-counters table)


HISTORY = "history_length"  # the key of the history list length, whichever name the server has (HISTORY_NAMES)
KEYS = (
    Key("Questions", "/s", "statements clients sent", True),
    Key("Threads_running", "threads", "connections running a statement", True),
    Key(HISTORY, "undo logs", "InnoDB history list length: undo logs purge has not removed yet", True),
    Key("Innodb_row_lock_current_waits", "waits", "row locks being waited for", True),
    Key("Com_select", "/s", "SELECT statements"),
    Key("Com_insert", "/s", "INSERT statements"),
    Key("Com_update", "/s", "UPDATE statements"),
    Key("Com_delete", "/s", "DELETE statements"),
    Key("Com_commit", "/s", "COMMIT statements"),
    Key("Com_stmt_execute", "/s", "prepared statements executed"),
    Key("Com_alter_table", "/s", "ALTER TABLE statements started"),
    Key("Opened_tables", "/s", "tables opened (each a table-cache miss)"),
    Key("Table_open_cache_misses", "/s", "table-cache misses"),
    Key("Table_open_cache_overflows", "/s", "tables evicted from a full table cache"),
    Key("Created_tmp_tables", "/s", "internal temporary tables"),
    Key("Created_tmp_disk_tables", "/s", "internal temporary tables on disk"),
    Key("Created_tmp_files", "/s", "temporary files (sort merges among them)"),
    Key("Sort_merge_passes", "/s", "sort merge passes (a sort larger than its buffer)"),
    Key("Qcache_hits", "/s", "query-cache hits"),
    Key("Qcache_inserts", "/s", "results stored in the query cache"),
    Key("Qcache_lowmem_prunes", "/s", "results evicted from a full query cache"),
    Key("Connections", "/s", "connection attempts"),
    Key("Threads_created", "/s", "threads created for connections (thread-cache misses)"),
    Key("Ssl_accepts", "/s", "TLS handshakes"),
    Key("Aborted_connects", "/s", "failed connection attempts"),
    Key("Innodb_row_lock_waits", "/s", "row-lock waits that ended"),
    Key("Innodb_row_lock_time", "ms/s", "row-lock waiting (ms per second: 1000 = one thread waiting all along)"),
    Key("Innodb_deadlocks", "/s", "deadlocks"),
    Key("lock_deadlocks", "/s", "deadlocks (INNODB_METRICS)"),
    Key("lock_timeouts", "/s", "row-lock wait timeouts (INNODB_METRICS)"),
    Key("Handler_read_rnd_next", "/s", "rows read by table scans"),
    Key("Handler_read_key", "/s", "rows read by index lookups"),
    Key("Handler_write", "/s", "rows written"),
    Key("Handler_update", "/s", "rows updated"),
    Key("Handler_delete", "/s", "rows deleted"),
    Key("Innodb_buffer_pool_reads", "/s", "pages read from disk into the buffer pool"),
    Key("Innodb_buffer_pool_wait_free", "/s", "waits for a free buffer-pool page"),
    Key("Innodb_data_fsyncs", "/s", "InnoDB fsyncs (the redo log's among them on MariaDB 10.8+)"),
    Key("Innodb_os_log_fsyncs", "/s", "redo log fsyncs"),
    Key("Innodb_log_waits", "/s", "waits for room in the redo log buffer"),
    Key("Binlog_commits", "/s", "transactions written to the binary log"),
    Key("Binlog_group_commits", "/s", "binary-log group commits"),
)


def is_level(name: str) -> bool:
    """A level (a gauge read per sample) rather than a count since start."""
    return name.startswith(LEVEL_PREFIXES)


@dataclass(frozen=True)
class Poll:
    """One read of the status: the whole second it belongs to (stamped at its midpoint, as every per-second
    source's), when it began (``t``, CLOCK_MONOTONIC: the server computes the status right then) and how
    long it took (the server's answer as the client saw it, ms)."""

    second: int
    t: float
    ms: float


@dataclass(frozen=True)
class Transaction:
    """One InnoDB transaction as INNODB_TRX, the processlist and SHOW ENGINE INNODB STATUS show it."""

    trx_id: str = ""  # as the server prints it (a read-only transaction's id is not a real id: key on the thread)
    state: str = ""  # RUNNING, LOCK WAIT, ROLLING BACK, COMMITTING
    age_s: int | None = None  # since trx_started
    thread_id: int | None = None  # the connection (processlist Id, trx_mysql_thread_id)
    statement: str = ""  # the running statement as a digest (literals replaced by ?), "" when idle
    isolation: str = ""
    wait_s: int | None = None  # how long it has waited for a lock (LOCK WAIT)
    rows_locked: int | None = None
    rows_modified: int | None = None
    command: str = ""  # processlist Command: Sleep is a transaction left open between statements
    idle_s: int | None = None  # processlist Time (seconds in the current command)
    user: str = ""
    read_view: bool = False  # it holds a read view (SHOW ENGINE INNODB STATUS)
    view_sees_below: int | None = None  # its read view sees transactions below this id ("sees < N")
    listed: bool = False  # SHOW ENGINE INNODB STATUS listed it with its connection: ``read_view`` is known


@dataclass(frozen=True)
class InnodbState:
    """InnoDB's transactions and purge at one end of the capture (``when``: start or end)."""

    when: str = ""
    second: int | None = None
    history_length: int | None = None
    history_source: str = ""  # which of HISTORY_NAMES, or the SHOW ENGINE INNODB STATUS line
    trx_id_counter: int | None = None
    purge_trx_no: int | None = None  # "Purge done for trx's n:o < N"
    purge_undo_no: int | None = None
    purge_state: str = ""
    read_views: int | None = None  # "N read views open inside InnoDB"
    transactions: int | None = None  # INNODB_TRX rows
    lock_waits: int | None = None  # of them in LOCK WAIT
    oldest: tuple[Transaction, ...] = ()  # the oldest transactions, oldest first (bounded)
    waiting: tuple[Transaction, ...] = ()  # transactions waiting for a lock, longest first (bounded)
    missing: tuple[str, ...] = ()

    def oldest_transaction(self) -> Transaction | None:
        return max(self.oldest, key=lambda t: t.age_s or 0, default=None) if self.oldest else None

    def oldest_view(self) -> Transaction | None:
        """The transaction whose read view holds purge back furthest: the lowest id its view still sees, else
        the oldest one the status shows with a view. Where the status counts views open but does not list the
        transaction that holds one (MariaDB 10.2 prints a read-only transaction as "not started", without its
        connection), the oldest REPEATABLE READ or SERIALIZABLE transaction it did not list: the likely
        holder, as only those keep one view for the whole transaction."""
        views = [t for t in self.oldest if t.read_view]
        seen = [t for t in views if t.view_sees_below is not None]
        if seen:
            return min(seen, key=lambda t: (t.view_sees_below, -(t.age_s or 0)))
        if views:
            return max(views, key=lambda t: t.age_s or 0)
        if self.read_views:
            likely = [t for t in self.oldest if t.isolation in ("REPEATABLE READ", "SERIALIZABLE") and not t.listed]
            return max(likely, key=lambda t: t.age_s or 0, default=None)
        return None


@dataclass(frozen=True)
class OwnTraffic:
    """What one of pmuprof's connections added to the per-session counters (PER_SESSION) over its polls:
    measured on that connection's own session status before its first counted poll and after its last.
    ``polls``: when each of those polls began (CLOCK_MONOTONIC; a statement's counters move as it starts);
    each poll is given an equal part. ``ends``: when each ended (a status read it overlapped cannot tell
    whether it came before or after). ``thread``: the server thread that ran them."""

    source: str = ""  # the capture source ("status", "processlist")
    polls: tuple[float, ...] = ()
    statements: int = 0
    counters: Mapping[str, float] = field(default_factory=dict)
    ends: tuple[float, ...] = ()
    # the server's OS thread serving this connection, as the server said when it connected (None: not known);
    # with one thread per connection (the default) its samples are this source's statements' CPU
    thread: int | None = None

    def __post_init__(self) -> None:
        if self.ends and len(self.ends) != len(self.polls):
            raise TypeError(f"own {self.source}: {len(self.ends)} ends for {len(self.polls)} polls")

    def overlaps(self, start: float, end: float) -> bool:
        """Whether one of its polls ran while [start, end] did."""
        return any(a < end and b > start for a, b in zip(self.polls, self.ends))

    def within(self, name: str, t0: float, t1: float) -> float:
        """What its polls that began after ``t0`` and by ``t1`` added to ``name``."""
        if not self.polls or name not in self.counters:
            return 0.0
        inside = sum(1 for t in self.polls if t0 < t <= t1)
        return self.counters[name] * inside / len(self.polls)


@dataclass(frozen=True)
class ServerStatus:
    """status.json (format 1)."""

    format: int = STATUS_FORMAT
    clock: str = CLOCK
    source: str = ""  # the endpoint, as mysql.json's ``source``
    proof: str = ""  # how the connection was proven to reach ``pid``
    pid: int | None = None
    server: ServerVersion = field(default_factory=ServerVersion)
    read_with: str = ""  # the statement that read the status
    polls: tuple[Poll, ...] = ()
    values: Mapping[str, tuple[float | None, ...]] = field(default_factory=dict)  # per poll; None: not read
    first: Mapping[str, str] = field(default_factory=dict)  # the whole status at the first poll
    last: Mapping[str, str] = field(default_factory=dict)  # and at the last
    innodb: tuple[InnodbState, ...] = ()  # start, end
    own: tuple[OwnTraffic, ...] = ()
    notes: tuple[str, ...] = ()  # what could not be read, and why collection stopped early

    def __post_init__(self) -> None:
        if self.format > STATUS_FORMAT:
            raise TypeError(f"format {self.format} is newer than this pmuprof reads ({STATUS_FORMAT})")
        for name, row in self.values.items():
            if len(row) != len(self.polls):
                raise TypeError(f"values.{name}: {len(row)} values for {len(self.polls)} polls")
        if any(b.t < a.t for a, b in zip(self.polls, self.polls[1:])):
            raise TypeError("polls: not in time order")

    def state(self, when: str) -> InnodbState | None:
        return next((s for s in self.innodb if s.when == when), None)
