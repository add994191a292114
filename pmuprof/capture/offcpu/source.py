"""The off-CPU source: the tracer planned at start, run inside perf's window, folded when it stops."""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import ResourceError
from ...model import rundir
from ...model.offcpu import OffCpu as OffCpuRun
from ..lifecycle import Child, Context, Part, Source
from . import tracer

FILES = (rundir.OFFCPU, rundir.THREADS, rundir.OFFCPU_RAW, rundir.OFFCPU_LOG, rundir.RECOVERED_CALLERS)


class OffCpu(Source):
    """Plans at start (the threads' /proc snapshot, the tracer's argv or why it cannot run); the tracer runs
    as a child of perf's window (counting from perf's enable); stop folds its output and the end snapshot."""

    name = "offcpu"

    def __init__(self) -> None:
        self.plan = tracer.Plan(False)
        self.end: tracer.EndSnapshot | None = None

    @classmethod
    def of(cls, ctx: Context) -> OffCpu | None:
        return None if ctx.opts.off_cpu is False else cls()  # None: capture's default, decided at start

    def start(self, ctx: Context) -> None:
        opts = ctx.opts
        self.plan = tracer.plan(
            ctx.out_dir,
            ctx.pids,
            {t.pid: t.label for t in ctx.run.targets},
            opts.duration,
            opts.off_cpu,
            opts.frequency if opts.call_graph == "fp" else 0,
        )

    def children(self) -> Mapping[str, Child]:
        p = self.plan
        return {self.name: Child(p.argv, p.out_log, user_sp=p.sample_hz > 0, at_end=self._at_end)} if p.argv else {}

    def _at_end(self) -> None:
        """The threads' /proc states at the instant the tracer's blocks are kept: the stack each block began
        with is paired with the state of the same block (read after the stop, under load seconds later, a
        thread is often in the next one)."""
        self.end = tracer.end_snapshot(self.plan.pids)

    def stop(self, ctx: Context) -> Part:
        if not self.plan.requested:
            return Part(self.name)
        out = ctx.window.outcome
        returncode, stderr = (out.returncodes.get(self.name), out.stderr.get(self.name, "")) if out else (None, "")
        try:
            result, warnings, features_off = tracer.finish(
                self.plan, ctx.out_dir, returncode, stderr, ctx.opts.per_thread_roots, self.end
            )
        except ResourceError as err:  # a full disk: run.json still gets written, and says why
            result = OffCpuRun(requested=True, why_not=err.message)
            warnings, features_off = (f"off-CPU stacks not written: {err.message}",), ()
        return Part(
            self.name,
            fields={"offcpu": result},
            warnings=warnings,
            features_off=features_off,
            files=FILES,
            why_not="" if result is None or result.recorded else result.why_not,
        )
