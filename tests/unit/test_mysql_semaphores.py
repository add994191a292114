"""SEMAPHORES parser against MySQL 5.5/5.6/5.7/8.0 and MariaDB 10.4/10.11 monitor output."""

from __future__ import annotations

import pytest

from pmuprof.capture.mysql.semaphores import parse_semaphores, split_sections

HEAD = (
    "=====================================\n2026-11-21 12:44:21 0x7f INNODB MONITOR OUTPUT\n"
    "=====================================\nPer second averages calculated from the last 3 seconds\n"
    "-----------------\nBACKGROUND THREAD\n-----------------\nsrv_master_thread loops: 3 srv_idle\n"
)
TAIL = (
    "------------\nTRANSACTIONS\n------------\nTrx id counter 15\n---TRANSACTION 421, not started\n"
    "--------\nFILE I/O\n--------\nPending flushes (fsync): 0\n"
)


def status(body: str) -> str:
    return HEAD + "----------\nSEMAPHORES\n----------\n" + body + TAIL


MYSQL56 = """OS WAIT ARRAY INFO: reservation count 1321
OS WAIT ARRAY INFO: signal count 1294
Mutex spin waits 5672, rounds 59325, OS waits 1787
RW-shared spins 3240, rounds 89672, OS waits 2819
RW-excl spins 120, rounds 4234, OS waits 121
Spin rounds per wait: 10.46 mutex, 27.68 RW-shared, 35.28 RW-excl
"""
MYSQL57 = """OS WAIT ARRAY INFO: reservation count 3917
--Thread 139924453828352 has waited at btr0sea.ic line 90 for 0.00 seconds the semaphore:
S-lock on RW-latch at 0x7f4e0c0e9e78 created in file btr0sea.cc line 195
a writer (thread id 139924455163648) has reserved it in mode exclusive
number of readers 0, waiters flag 1, lock_word: 0
Last time read locked in file btr0sea.ic line 90
OS WAIT ARRAY INFO: signal count 3735
RW-shared spins 0, rounds 2762, OS waits 1225
RW-excl spins 0, rounds 28005, OS waits 715
RW-sx spins 61, rounds 1511, OS waits 43
Spin rounds per wait: 2762.00 RW-shared, 28005.00 RW-excl, 24.77 RW-sx
"""
MYSQL80 = """OS WAIT ARRAY INFO: reservation count 41
--Thread 140373842855680 has waited at fil0fil.cc line 1907 for 1 seconds the semaphore:
Mutex at 0x55d0b7d1d1a8, Mutex FIL_SHARD created fil0fil.cc:1428, lock var 1
OS WAIT ARRAY INFO: signal count 40
RW-shared spins 12, rounds 30, OS waits 9
RW-excl spins 4, rounds 90, OS waits 3
RW-sx spins 0, rounds 0, OS waits 0
Spin rounds per wait: 2.50 RW-shared, 22.50 RW-excl, 0.00 RW-sx
"""
MYSQL55_OLD = """OS WAIT ARRAY INFO: reservation count 7, signal count 7
Mutex spin waits 0, rounds 0, OS waits 0
RW-shared spins 8, OS waits 4; RW-excl spins 2, OS waits 1
"""
MARIADB104 = """OS WAIT ARRAY INFO: reservation count 120
OS WAIT ARRAY INFO: signal count 118
RW-shared spins 0, rounds 0, OS waits 0
RW-excl spins 10, rounds 300, OS waits 6
RW-sx spins 0, rounds 0, OS waits 0
Spin rounds per wait: 0.00 RW-shared, 30.00 RW-excl, 0.00 RW-sx
"""


def test_mysql56_mutex_and_rw_counts_and_server_ratio() -> None:
    sem = parse_semaphores(status(MYSQL56))
    assert sem["found"] and not sem["empty"]
    assert sem["os_wait_array"] == {"reservation_count": 1321, "signal_count": 1294}
    assert sem["latches"]["mutex"] == {"spin_waits": 5672, "rounds": 59325, "os_waits": 1787}
    assert sem["latches"]["rw_excl"] == {"spin_waits": 120, "rounds": 4234, "os_waits": 121}
    assert sem["spin_rounds_per_wait"] == {"mutex": 10.46, "rw_shared": 27.68, "rw_excl": 35.28}
    assert "rw_sx" not in sem["latches"]


def test_mysql57_rw_sx_and_long_wait() -> None:
    sem = parse_semaphores(status(MYSQL57))
    assert set(sem["latches"]) == {"rw_shared", "rw_excl", "rw_sx"}
    assert sem["latches"]["rw_sx"] == {"spin_waits": 61, "rounds": 1511, "os_waits": 43}
    assert sem["spin_rounds_per_wait"]["rw_excl"] == 28005.0
    assert sem["waits"] == [
        {
            "thread": 139924453828352,
            "at": "btr0sea.ic:90",
            "seconds": 0.0,
            "semaphore": "S-lock on RW-latch at 0x7f4e0c0e9e78 created in file btr0sea.cc line 195",
        }
    ]
    assert sem["os_wait_array"]["signal_count"] == 3735


def test_mysql80_fil_shard_wait() -> None:
    sem = parse_semaphores(status(MYSQL80))
    assert sem["waits"][0]["at"] == "fil0fil.cc:1907"
    assert "FIL_SHARD" in sem["waits"][0]["semaphore"]
    assert sem["latches"]["rw_shared"]["os_waits"] == 9


def test_old_55_format_without_rounds_computes_nothing_it_cannot() -> None:
    sem = parse_semaphores(status(MYSQL55_OLD))
    assert sem["latches"]["mutex"] == {"spin_waits": 0, "rounds": 0, "os_waits": 0}
    assert sem["latches"]["rw_shared"] == {"spin_waits": 8, "os_waits": 4}
    assert sem["latches"]["rw_excl"] == {"spin_waits": 2, "os_waits": 1}
    assert sem["spin_rounds_per_wait"] == {"mutex": 0.0}
    assert sem["os_wait_array"] == {"reservation_count": 7, "signal_count": 7}


def test_ratio_computed_when_server_line_missing() -> None:
    body = "RW-shared spins 4, rounds 10, OS waits 1\n"
    assert parse_semaphores(status(body))["spin_rounds_per_wait"] == {"rw_shared": 2.5}


@pytest.mark.parametrize("body", [MARIADB104])
def test_mariadb_104(body: str) -> None:
    sem = parse_semaphores(status(body))
    assert sem["latches"]["rw_excl"]["rounds"] == 300 and sem["spin_rounds_per_wait"]["rw_excl"] == 30.0


def test_mariadb_1011_empty_section() -> None:
    sem = parse_semaphores(status(""))
    assert sem["found"] and sem["empty"] and sem["latches"] == {} and sem["raw"] == ""


def test_missing_section_and_garbage() -> None:
    assert parse_semaphores("")["found"] is False
    assert parse_semaphores("no monitor here\n--- \n")["found"] is False


def test_section_split_keeps_neighbours_apart() -> None:
    sections = split_sections(status(MYSQL56))
    assert list(sections) == ["BACKGROUND THREAD", "SEMAPHORES", "TRANSACTIONS", "FILE I/O"]
    assert "Trx id counter" not in sections["SEMAPHORES"]
    assert "---TRANSACTION 421" in sections["TRANSACTIONS"]
