"""Browser tests: one headless Chromium for the session, reports written once per session; skipped without Chromium."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from collections.abc import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cdp import Browser, chromium  # noqa: E402

from pmuprof.model.profile import Profile  # noqa: E402
from pmuprof.findings.diagnosis import Diagnosis  # noqa: E402
from pmuprof.report import write_outputs  # noqa: E402
from pmuprof.report.diff import diff_profiles, write_diff  # noqa: E402

HOSTILE = "evil</script><img src=x onerror=alert(1)>"
ODD = "a;b&c=d #x"  # a frame name that needs encoding in the URL hash
STACKS = {
    ("mariadbd", "start_thread", "do_command", "btr_estimate", "fil_space_get", "mutex_enter", "ut_delay"): 500,
    ("mariadbd", "start_thread", "do_command", "row_search_mvcc"): 300,
    ("mariadbd", "start_thread", "do_command", "row_search_mvcc", "ut_delay"): 40,
    ("mariadbd", "start_thread", "purge", "mutex_enter", "ut_delay"): 100,
    ("mariadbd", "start_thread", "recurse", "recurse", "recurse", "leafy"): 30,
    ("mariadbd", "[unknown]", HOSTILE): 10,
    ("mariadbd", "start_thread", "tcp_recvmsg_[k]"): 50,
    ("mariadbd", "start_thread", ODD): 20,
}


HOT = "ns0::Kind0::function_0(unsigned long, void*)"  # in the synthetic stacks, the first hot prefix frame


def synthetic_stacks(seed: int = 7) -> dict[tuple[str, ...], int]:
    """About 100k flame-graph nodes: shared hot prefixes, long random tails, long-tailed counts."""
    rnd = random.Random(seed)
    funcs = [f"ns{i % 37}::Kind{i % 211}::function_{i}(unsigned long, void*)" for i in range(6000)]
    hot = funcs[:40]
    stacks: dict[tuple[str, ...], int] = {}
    while len(stacks) < 5200:
        head = tuple(hot[rnd.randrange(k * 4, k * 4 + 4)] for k in range(rnd.randint(2, 8)))
        tail = tuple(rnd.choice(funcs) for _ in range(rnd.randint(12, 30)))
        stacks[("mariadbd", "start_thread") + head + tail] = max(1, int(rnd.paretovariate(1.1)))
    return stacks


def _report(directory: Path, stacks: dict[tuple[str, ...], int], max_nodes: int = 200_000) -> str:
    paths = write_outputs(Profile(stacks, source="browser-test.folded"), Diagnosis(), directory, max_nodes)
    return paths["html"].as_uri()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    exe = chromium()
    if not exe:
        pytest.skip("no Chromium here (apt-get install chromium) to drive the report's flame graph")
    b = Browser(exe)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture(scope="session")
def report_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _report(tmp_path_factory.mktemp("report"), STACKS)


@pytest.fixture(scope="session")
def big_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    directory = tmp_path_factory.mktemp("big")
    return _report(directory, synthetic_stacks()), directory / "report.html"


@pytest.fixture(scope="session")
def diff_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """before: STACKS; after: the spin in ut_delay cut to a fifth, purge doubled."""
    after = dict(STACKS)
    spin = ("mariadbd", "start_thread", "do_command", "btr_estimate", "fil_space_get", "mutex_enter", "ut_delay")
    after[spin] = 100
    after[("mariadbd", "start_thread", "purge", "mutex_enter", "ut_delay")] = 200
    result = diff_profiles(Profile(STACKS, source="before.folded"), Profile(after, source="after.folded"))
    return write_diff(result, tmp_path_factory.mktemp("diff"))["diff.html"].as_uri()
