#!/usr/bin/env python3
"""Connection churn: workers that connect over TCP (TLS unless --no-tls), run SELECT 1 and disconnect.

    python3 tests/loads/connect_churn.py --port P --user U --password W --seconds 20 --workers 2
    python3 tests/loads/connect_churn.py ... --reuse     # the fix: one connection per worker, kept open
    python3 tests/loads/connect_churn.py ... --rate 200  # paced: 200 rounds a second over all workers

Prints ``ready`` once per worker when its first connection is open, then one line,
``connections <n> queries <m> seconds <s>`` when --seconds have passed or SIGTERM came (to the process group,
as a test stops it once its capture has recorded: each worker ends its round first). SIGUSR1 holds the workers
after their round (no handshake open, nothing sent) until SIGUSR2: a test keeps them still while pmuprof
starts (tests/helpers.py capture_under). The client does not verify the
server's certificate (MariaDB 11.4 generates a self-signed one); TLS still runs the full handshake.
"""

from __future__ import annotations

import argparse
import os
import multiprocessing as mp
import signal
import ssl
import time

import pymysql
from pacing import Pacer


def _connect(args: argparse.Namespace) -> pymysql.Connection:
    ctx = None
    if not args.no_tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    return pymysql.connect(
        host=args.host,
        port=args.port,
        user=args.user,
        password=args.password,
        ssl=ctx,
        ssl_disabled=args.no_tls,
        connect_timeout=30,
    )


_stopped = False
_held = False


def _stop(_sig: int, _frame: object) -> None:
    global _stopped
    _stopped = True


def _hold(sig: int, _frame: object) -> None:
    global _held
    _held = sig == signal.SIGUSR1


def _worker(args: argparse.Namespace, out: mp.Queue) -> None:
    # before its ``ready``: a signal after it ends (SIGTERM) or holds (SIGUSR1, until SIGUSR2) the round
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGUSR1, _hold)
    signal.signal(signal.SIGUSR2, _hold)
    connections = queries = 0
    end = time.monotonic() + args.seconds
    pace = Pacer(args.rate / args.workers)
    con = None
    while time.monotonic() < end and not _stopped:
        pace.wait()  # before the checks: a signal during its sleep holds or ends the round that was due
        if _held:
            while _held and not _stopped:  # between rounds: nothing half done with the server
                time.sleep(0.01)
            pace.restart()  # a held round is not owed afterwards: no burst on release
        if _stopped:
            break
        if con is None:
            con = _connect(args)
            connections += 1
            if connections == 1:
                os.write(1, b"ready\n")  # each worker once, one write: two workers' lines never interleave
        with con.cursor() as cur:
            cur.execute("SELECT 1")
        queries += 1
        if not args.reuse:
            con.close()
            con = None
    if con is not None:
        con.close()
    out.put((connections, queries))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--user", required=True)
    ap.add_argument("--password", default="")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-tls", action="store_true", help="plain TCP")
    ap.add_argument("--reuse", action="store_true", help="keep one connection per worker (a pool)")
    ap.add_argument("--rate", type=float, default=0.0, help="rounds a second over all workers (0: flat out)")
    args = ap.parse_args()
    out: mp.Queue = mp.Queue()
    for sig in (signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2):  # the workers act on them; this one waits for them
        signal.signal(sig, signal.SIG_IGN)
    procs = [mp.Process(target=_worker, args=(args, out)) for _ in range(args.workers)]
    for p in procs:
        p.start()
    done = [out.get() for _ in procs]
    for p in procs:
        p.join()
    print(f"connections {sum(c for c, _ in done)} queries {sum(q for _, q in done)} seconds {args.seconds:g}")


if __name__ == "__main__":
    main()
