#!/usr/bin/env python3
"""Old read views: one session opens a REPEATABLE READ snapshot and stays idle in it, so purge cannot remove
any undo log committed after it; --readers more sessions open theirs too and keep re-reading ranges of
sbtest1, rebuilding from undo every row version written since (row_vers_build_for_consistent_read).

    python3 tests/loads/old_view.py --socket S --user U --password W --db sbtest --readers 2 --seconds 30
    python3 tests/loads/old_view.py ... --rate 20     # paced: 20 re-reads a second over all readers

Run it beside a write load (sysbench oltp_update_non_index). Prints ``ready`` once every snapshot is open,
then runs until --seconds have passed or it is killed (the server rolls the snapshots back on disconnect).
"""

from __future__ import annotations

import argparse
import threading
import time

import pymysql
from pacing import Pacer

SNAPSHOT = ("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ", "START TRANSACTION WITH CONSISTENT SNAPSHOT")


def _session(args: argparse.Namespace) -> pymysql.Connection:
    con = pymysql.connect(
        unix_socket=args.socket, user=args.user, password=args.password, database=args.db, connect_timeout=30
    )
    with con.cursor() as cur:
        for sql in SNAPSHOT:
            cur.execute(sql)
        cur.execute("SELECT COUNT(*) FROM sbtest1")  # the read view exists from the first read
    return con


def _read(con: pymysql.Connection, args: argparse.Namespace, end: float) -> None:
    start = 1
    pace = Pacer(args.rate / args.readers)
    with con.cursor() as cur:
        while time.monotonic() < end:
            pace.wait()
            cur.execute(
                "SELECT SUM(LENGTH(c)) FROM sbtest1 WHERE id BETWEEN %s AND %s", (start, start + args.range - 1)
            )
            cur.fetchall()
            start = start + args.range if start + 2 * args.range <= args.table_size else 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", required=True)
    ap.add_argument("--user", required=True)
    ap.add_argument("--password", default="")
    ap.add_argument("--db", default="sbtest")
    ap.add_argument("--readers", type=int, default=2)
    ap.add_argument("--range", type=int, default=500, help="rows per re-read")
    ap.add_argument("--table-size", type=int, default=10000)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=0.0, help="re-reads a second over all readers (0: flat out)")
    args = ap.parse_args()
    end = time.monotonic() + args.seconds
    holder = _session(args)  # idle in its snapshot: the oldest read view
    readers = [_session(args) for _ in range(args.readers)]
    print("ready", flush=True)
    threads = [threading.Thread(target=_read, args=(con, args, end), daemon=True) for con in readers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for con in (holder, *readers):
        con.close()


if __name__ == "__main__":
    main()
