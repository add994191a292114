"""The CPU-by-thread and processlist tables the analyse stage joins (``Profile.threads``), as typed rows."""

from __future__ import annotations

from typing import TypedDict


class ThreadRow(TypedDict):
    """One group of a table (a thread, a processlist state, a statement, user@db) and the function that sets
    it apart ('' when none does)."""

    key: str
    samples: int
    share: float  # of the samples with a thread id
    function: str
    function_share: float  # of the group's samples
    function_overall: float  # of its process's samples
    sentence: str  # the group and its function in words ('' for a group that is no group of threads)


class ThreadTable(TypedDict):
    name: str  # thread | state | statement | user | ...
    title: str
    rows: list[ThreadRow]  # busiest first
    cells: list[list[int]]  # [row, second, samples] per (row, second) with samples


class _Joined(TypedDict, total=False):
    """With a processlist polled: the samples joined to a row, the polls, and the seconds they span."""

    joined: int
    polls: int
    seconds: int


class ThreadTables(_Joined):
    samples: int  # with a thread id
    polled: bool  # a processlist was polled during the capture
    tables: list[ThreadTable]
