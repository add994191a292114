"""The capture-source lifecycle without perf: the order sources start and stop, what run.json gets from
them, and cleanup on every way out (a failing start, a failing perf, a stop signal after the window)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from pmuprof import signals
from pmuprof.capture import lifecycle
from pmuprof.capture.lifecycle import Child, Context, Part, Source, WindowSource, run_sources
from pmuprof.capture.options import RecordOptions
from pmuprof.capture.persecond import Measure, PerSecond
from pmuprof.errors import PerfError
from pmuprof.model import rundir
from pmuprof.model.run import Run
from pmuprof.model.series import Series


class Recorder(Source):
    def __init__(self, name: str, log: list[str], with_window: bool = False, part: Part | None = None) -> None:
        self.name, self.log, self.with_window, self.part = name, log, with_window, part

    def start(self, ctx: Context) -> None:
        self.log.append(f"start {self.name}")

    def children(self):
        return {self.name: Child(("true",), Path("/dev/null"))} if self.name == "tracer" else {}

    def stop(self, ctx: Context) -> Part:
        self.log.append(f"stop {self.name}")
        return self.part or Part(self.name)

    def cleanup(self) -> None:
        self.log.append(f"cleanup {self.name}")


class Window(Recorder, WindowSource):
    def __init__(self, log: list[str], fail: bool = False) -> None:
        super().__init__("perf", log, part=Part("perf", {"duration_s": 2.0}, ("perf's note",), files=("perf.data",)))
        self.fail = fail

    def start(self, ctx: Context) -> None:
        self.log.append(f"start perf with {sorted(ctx.window.children)}")

    def wait(self, ctx: Context) -> None:
        self.log.append("window")
        if self.fail:
            raise PerfError("perf failed: no such event", "run `pmuprof doctor`")

    def end(self, ctx: Context) -> None:
        self.log.append("end perf")


def _ctx(tmp_path: Path) -> Context:
    tmp_path.mkdir(exist_ok=True)
    return Context(RecordOptions(pids=(1,), out_dir=tmp_path), (1,), Run(pmuprof_version="test"))


def test_sources_start_in_order_and_stop_window_first_then_per_second_then_the_rest(tmp_path: Path):
    """The window ends first (perf told to stop); the per-second sources stop while perf finishes its file,
    then perf's stop waits for it; run.json takes perf's notes first all the same."""
    log: list[str] = []
    rate = Series("host.busy", "host", "share", first=5, values=(0.5,))
    sources = [
        Recorder("archive", log, part=Part("archive", {"kernel_symbols": None}, ("archive's note",))),
        Recorder("tracer", log),  # said nothing and wrote nothing: not listed
        Recorder("host", log, with_window=True, part=Part("host", series=(rate,))),
    ]
    run, pending = run_sources(_ctx(tmp_path), sources, Window(log), on_stopped=lambda: log.append("on_stopped"))
    assert log == [
        "start archive",
        "start tracer",
        "start host",
        "start perf with ['tracer']",  # the children are gathered before perf starts
        "window",
        "end perf",
        "stop host",
        "stop perf",
        "on_stopped",
        "stop tracer",
        "stop archive",
        "cleanup perf",
        "cleanup host",
        "cleanup tracer",
        "cleanup archive",
    ]
    written = json.loads((tmp_path / rundir.RUN_JSON).read_text())
    assert [s["name"] for s in written["sources"]] == ["archive", "host", "perf"]
    assert written["warnings"] == ["perf's note", "archive's note"] and written["duration_s"] == 2.0
    assert json.loads((tmp_path / rundir.SERIES).read_text())["series"][0]["name"] == "host.busy"
    assert pending == [] and not (tmp_path / rundir.ROOM).exists()


def test_a_failing_start_cleans_up_what_started(tmp_path: Path):
    log: list[str] = []

    class Broken(Recorder):
        def start(self, ctx: Context) -> None:
            raise OSError("cannot open /proc/1/task")

    with pytest.raises(OSError, match="cannot open"):
        run_sources(_ctx(tmp_path), [Recorder("a", log), Broken("b", log), Recorder("c", log)], Window(log))
    assert log == ["start a", "cleanup b", "cleanup a"]  # c never started; b's cleanup was pushed before its start


def test_a_failing_perf_says_so_in_run_json_and_cleans_up(tmp_path: Path):
    log: list[str] = []
    with pytest.raises(PerfError):
        run_sources(_ctx(tmp_path), [Recorder("host", log, with_window=True)], Window(log, fail=True))
    assert log[-2:] == ["cleanup perf", "cleanup host"] and not any(e.startswith("stop") for e in log)
    assert json.loads((tmp_path / rundir.RUN_JSON).read_text())["warnings"] == [
        "capture failed: perf failed: no such event"
    ]


def test_a_signal_after_the_window_is_what_stopped_the_capture(tmp_path: Path):
    """SIGHUP arriving while the sources stop (the window ran its clock) is noted, not raised: run.json says
    it stopped the capture, the stops finish, and the caller is told nothing more is pending."""
    log: list[str] = []

    class Hangup(Recorder):
        def stop(self, ctx: Context) -> Part:
            os.kill(os.getpid(), signal.SIGHUP)
            return super().stop(ctx)

    with signals.installed():
        run, pending = run_sources(_ctx(tmp_path), [Recorder("a", log), Hangup("b", log)], Window(log))
    assert run.stopped_by == "SIGHUP" and pending == [] and "stop a" in log
    assert json.loads((tmp_path / rundir.RUN_JSON).read_text())["stopped_by"] == "SIGHUP"


def test_at_end_hooks_run_once_while_every_child_still_runs(tmp_path: Path):
    """A child's at_end (the off-CPU source's end snapshot) runs when the window ends, before perf and the
    children are signalled: what it reads is the state the tracer keeps, not the state after the stop."""
    from pmuprof.capture.runner import Bounded

    seen: list[list[bool]] = []
    procs = {name: (["sleep", "60"], tmp_path / f"{name}.log") for name in ("record", "tracer")}
    bounded = Bounded(procs, (), None, at_end=(lambda: seen.append([p.poll() is None for p in started.values()]),))
    started = bounded.started
    bounded.start()
    out = bounded.stop()
    bounded.stop()  # once: cleanup calls it again
    assert seen == [[True, True]], seen
    assert all(p.poll() is not None for p in started.values()) and set(out.returncodes) == {"record", "tracer"}


def test_a_failing_at_end_hook_still_stops_everything(tmp_path: Path):
    from pmuprof.capture.runner import Bounded

    def broken() -> None:
        raise OSError("the target's /proc went away")

    bounded = Bounded({"record": (["sleep", "60"], tmp_path / "record.log")}, (), None, at_end=(broken,))
    bounded.start()
    bounded.stop()
    assert bounded.started["record"].poll() is not None


def test_ending_the_window_does_not_wait_for_perf_to_finish_its_file(tmp_path: Path):
    """end() reads the window's length and signals every program without waiting (perf record spends a second
    writing build-ids after SIGINT under load, which the per-second sources need not wait for); stop() then
    waits for them."""
    from pmuprof.capture.runner import Bounded

    ready, go = tmp_path / "trapped", tmp_path / "go"
    # after SIGINT it writes on until told to finish (not for a second: a starved test could miss that)
    finishing = [
        "sh",
        "-c",
        f"trap 'until [ -e {go} ]; do sleep 0.05; done; exit 0' INT; : > {ready}; while :; do sleep 0.05; done",
    ]
    bounded = Bounded({"record": (finishing, tmp_path / "record.log")}, (), None)
    bounded.start()
    while not ready.exists():  # its trap is set: SIGINT now makes it finish, as perf record does
        assert bounded.started["record"].poll() is None
        time.sleep(0.01)
    out = bounded.end()
    assert out.elapsed_s >= 0 and out.window_start_s == bounded.t0
    assert bounded.started["record"].poll() is None  # still writing: end() did not wait
    go.touch()
    assert bounded.end() is out and bounded.stop() is out
    assert out.returncodes == {"record": 0}  # finished and exited by itself, not killed


class SlowToMeasure(PerSecond):
    """A per-second source whose connection takes ``opening`` seconds (a saturated server or host), or lasts until
    ``until`` is set (at most a minute: a hang detector)."""

    name = "slow"
    measures = (Measure("slow.reads"),)

    def __init__(self, log: list[str], opening: float = 0.0, until: threading.Event | None = None) -> None:
        super().__init__()
        self.log, self.opening, self.until = log, opening, until

    def open(self, ctx: Context) -> None:
        time.sleep(self.opening)
        if self.until is not None:
            self.until.wait(60)

    def read(self) -> float:
        self.log.append("first reading" if self.polls == 0 else "reading")
        return 1.0

    def keep(self, second: int, reading: float) -> dict[str, float | None]:
        return {"slow.reads": reading}


class Started(Window):
    """The window, which sets ``started`` once perf has started."""

    def __init__(self, log: list[str]) -> None:
        super().__init__(log)
        self.started = threading.Event()

    def start(self, ctx: Context) -> None:
        super().start(ctx)
        self.started.set()


def test_perf_waits_for_a_source_that_is_slow_to_measure(tmp_path: Path, monkeypatch):
    """perf's window starts once every source measures: a per-second source whose connection takes 0.5 s has
    its first reading before perf starts. The wait's deadline is the next test's: here it only catches a hang
    (the suite's CPUs may be given to other tests' loads for seconds: this test once waited 10 s)."""
    monkeypatch.setattr(lifecycle, "READY_WAIT_S", 300.0)
    log: list[str] = []
    run, _ = run_sources(_ctx(tmp_path), [SlowToMeasure(log, 0.5)], Window(log))
    assert log.index("first reading") < log.index("start perf with []"), log
    assert not [w for w in run.warnings if "could measure" in w], run.warnings


def test_perf_waits_for_a_source_at_most_ready_wait_s(tmp_path: Path, monkeypatch):
    """A source that cannot measure does not hold perf back longer than READY_WAIT_S; run.json names it. The
    source here cannot measure before perf starts: waiting for it without that deadline would read first."""
    monkeypatch.setattr(lifecycle, "READY_WAIT_S", 0.2)
    log: list[str] = []
    window = Started(log)
    run, _ = run_sources(_ctx(tmp_path), [SlowToMeasure(log, until=window.started)], window)
    assert "first reading" not in log[: log.index("start perf with []")], log
    (note,) = [w for w in run.warnings if "could measure" in w]
    assert "before slow could measure" in note and "0.2 s" in note
