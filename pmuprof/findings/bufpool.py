"""Derived fact: how well the buffer pool holds what is read (misses, turnover, the size to try next)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .evidence import Summarized
from .facts import Facts, number

MIB = 1 << 20
DEFAULT_PAGE = 16384
DEFAULT_CHUNK = 128 * MIB  # innodb_buffer_pool_chunk_size default (MySQL 5.7.5+, MariaDB 10.2.2+)
GROWTH = 2  # without the data size, status counters do not tell the working set: try twice the pool
HEADROOM = 1.1  # with the data size: all of it, plus a tenth for the pages InnoDB adds as it grows


@dataclass(frozen=True, eq=False)
class PoolFit(Summarized):
    """Page reads against page requests over the capture, and what they say about the pool's size."""

    value: float | None  # miss_ratio
    miss_ratio: float | None  # pages read from disk per page request
    reads_per_s: float | None
    requests_per_s: float | None
    wait_free_per_s: float | None  # user threads that found no free page, per second
    read_mib_s: float | None
    pool_bytes: int | None
    pool_mib: float | None
    pool_pages: int | None
    turnover_s: float | None  # seconds in which the reads replace as many pages as the pool holds
    data_bytes: int | None  # the InnoDB tablespace files (mysql.json innodb_data)
    data_mib: float | None
    data_fits: bool | None  # the pool is already larger than all the InnoDB data (None: data size unknown)
    suggested_bytes: int | None
    basis: str  # how suggested_bytes was reached
    suggested: str  # the size to set, as SQL takes it ("268435456 /* 256 MiB */")
    summary: str


def _delta(facts: Facts, name: str) -> float | None:
    """A status counter's growth per second over the capture (0 when it did not grow), None when unknown."""
    st = facts.server.status if facts.server else None
    if st is None or not st.interval_s:
        return None
    if name in st.rates:
        return float(st.rates[name])
    before, after = number(st.before.get(name)), number(st.after.get(name))
    return (after - before) / st.interval_s if before is not None and after is not None else None


def pool_fit(facts: Facts, index: Any, missing: list[str]) -> PoolFit | None:
    """Miss ratio and turnover from Innodb_buffer_pool_reads / _read_requests, and the next size to try."""
    if facts.server is None:
        missing.append(facts.server_missing or "no server facts: buffer-pool status unknown")
        return None
    reads, requests = _delta(facts, "Innodb_buffer_pool_reads"), _delta(facts, "Innodb_buffer_pool_read_requests")
    wait_free = _delta(facts, "Innodb_buffer_pool_wait_free")
    size = number(facts.variable("innodb_buffer_pool_size"))
    page = number(facts.status("Innodb_page_size")) or number(facts.variable("innodb_page_size")) or DEFAULT_PAGE
    pages = number(facts.status("Innodb_buffer_pool_pages_total")) or (size / page if size else None)
    if reads is None or requests is None:
        missing.append("Innodb_buffer_pool_reads / _read_requests not sampled before and after the capture")
    miss = reads / requests if reads is not None and requests else None
    turnover = pages / reads if pages and reads else None
    data = facts.server.innodb_data.bytes if facts.server.innodb_data and facts.server.innodb_data.bytes else None
    if data is None:
        missing.append("InnoDB data size not captured (mysql.json innodb_data): the next size is twice the pool")
    suggested, basis = _suggest(facts, size, data)
    return PoolFit(
        miss,
        miss,
        reads,
        requests,
        wait_free,
        reads * page / MIB if reads is not None else None,
        int(size) if size else None,
        round(size / MIB, 1) if size else None,
        int(pages) if pages else None,
        turnover,
        data,
        round(data / MIB, 1) if data else None,
        (data * HEADROOM <= size) if data and size else None,
        suggested,
        basis,
        f"{suggested} /* {suggested / MIB:,.0f} MiB */" if suggested else "",
        _summary(miss, reads, requests, turnover, wait_free, size, data),
    )


def _suggest(facts: Facts, size: float | None, data: int | None) -> tuple[int | None, str]:
    """The next pool size: all the data plus a tenth when the data size is known (none when the pool already
    holds it), else twice the pool; rounded up to whole chunks per instance, as the server rounds it."""
    if not size:
        return None, ""
    chunk = number(facts.variable("innodb_buffer_pool_chunk_size")) or DEFAULT_CHUNK
    instances = number(facts.variable("innodb_buffer_pool_instances")) or 1
    unit = chunk * instances
    if data and data * HEADROOM <= size:
        return None, f"the pool already holds all the InnoDB data ({data / MIB:,.0f} MiB)"
    if data:
        want, basis = data * HEADROOM, f"the InnoDB data ({data / MIB:,.0f} MiB) plus a tenth"
    else:
        want, basis = GROWTH * size, "twice the pool (the data size is unknown)"
    return int(-(-want // unit) * unit), basis + f", in whole {unit / MIB:,.0f} MiB chunks"


def _summary(
    miss: float | None,
    reads: float | None,
    requests: float | None,
    turnover: float | None,
    wait_free: float | None,
    size: float | None,
    data: int | None,
) -> str:
    if miss is None or reads is None or requests is None:
        return "buffer-pool reads not known"
    text = f"{reads:,.0f} of {requests:,.0f} page requests a second went to disk ({miss:.1%})" + (
        f"; the reads replace a whole {size / MIB:,.0f} MiB pool every {turnover:,.2f} s" if turnover and size else ""
    )
    text += f"; {wait_free:,.1f} waits for a free page a second" if wait_free else ""
    return text + (f"; the InnoDB data is {data / MIB:,.0f} MiB" if data else "")
