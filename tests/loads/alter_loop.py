#!/usr/bin/env python3
"""Online table rebuilds in a loop: ALTER TABLE ... FORCE (an in-place rebuild, what OPTIMIZE TABLE does to
InnoDB and what a schema migration repeats table after table) again and again while an OLTP load runs.

    python3 tests/loads/alter_loop.py --socket S --user U --password W --db sbtest --table sbtest2 --seconds 30

Prints ``ready`` when the first rebuild has finished, then rebuilds until --seconds have passed or it is
killed, and prints ``alters <n>``.
"""

from __future__ import annotations

import argparse
import time

import pymysql


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
    alters = 0
    with con.cursor() as cur:
        while time.monotonic() < end:
            cur.execute(f"ALTER TABLE {args.table} FORCE")
            alters += 1
            if alters == 1:
                print("ready", flush=True)
    con.close()
    print(f"alters {alters}", flush=True)


if __name__ == "__main__":
    main()
