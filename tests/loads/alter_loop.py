#!/usr/bin/env python3
"""Online table rebuilds in a loop: ALTER TABLE ... FORCE (an in-place rebuild, what OPTIMIZE TABLE does to
InnoDB and what a schema migration repeats table after table) again and again while an OLTP load runs.

    python3 tests/loads/alter_loop.py --socket S --user U --password W --db sbtest --table sbtest2 --seconds 30

Prints ``ready`` when the first rebuild has finished, then rebuilds until --seconds have passed or it is
killed, and prints ``alters <n> deadlocks <m>``. An ALTER that InnoDB ends with a deadlock or a lock wait
timeout is run again, as a migration tool does: the loop used to die at the first one (1213 under
oltp_read_write on 10.11, seen), and a capture after that saw no rebuild.
"""

from __future__ import annotations

import argparse
import time

import pymysql

RETRIED = (1213, 1205)  # ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", required=True)
    ap.add_argument("--user", required=True)
    ap.add_argument("--password", default="")
    ap.add_argument("--db", default="sbtest")
    ap.add_argument("--table", default="sbtest2")
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args()
    if not args.table.isidentifier():
        ap.error(f"--table must be a plain table name, not {args.table!r}")
    end = time.monotonic() + args.seconds
    con = pymysql.connect(
        unix_socket=args.socket, user=args.user, password=args.password, database=args.db, connect_timeout=30
    )
    alters = deadlocks = 0
    with con.cursor() as cur:
        while time.monotonic() < end:
            try:
                cur.execute(f"ALTER TABLE {args.table} FORCE")
            except pymysql.err.OperationalError as err:
                # InnoDB chose the rebuild as a deadlock's victim (1213) or it waited too long for a lock (1205)
                if err.args[0] not in RETRIED:
                    raise
                deadlocks += 1
                continue
            alters += 1
            if alters == 1:
                print("ready", flush=True)
    con.close()
    print(f"alters {alters} deadlocks {deadlocks}", flush=True)


if __name__ == "__main__":
    main()
