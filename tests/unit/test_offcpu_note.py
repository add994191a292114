"""An on-CPU-only capture of a server mostly off the CPU says so on the first screen, with the --off-cpu command."""

from __future__ import annotations

from dataclasses import replace

from rules.conftest import FIXTURES, load_fixture

from pmuprof.findings.engine import diagnose
from pmuprof.model.offcpu import OffCpu
from pmuprof.model.server import Processlist
from pmuprof.report import build_payload
from pmuprof.report.markdown import render_markdown
from pmuprof.report.waiting import off_cpu_command, waiting

HEALTHY = FIXTURES / "healthy" / "mariadb1011-point-select.folded"  # 1,873 samples at 99 Hz, no off-CPU
COMMAND = ("pmuprof", "capture", "-p", "25476", "-d", "30s")


def _profile(executing: int, seconds: float = 30.0, offcpu: OffCpu | None = None):
    """The fixture as if captured for ``seconds`` with ``executing`` sessions running statements."""
    profile, _ = load_fixture(HEALTHY)
    run = replace(profile.run, duration_s=seconds, command=COMMAND, offcpu=offcpu)
    plist = Processlist(threads=executing + 2, commands={"Query": executing, "Sleep": 2})
    return replace(profile, run=run, server=replace(profile.server, processlist=plist))


def _payload(profile):
    return build_payload(profile, diagnose(profile))


def test_sessions_waiting_while_the_cpu_idles_get_the_note_and_the_command():
    # 1,873 samples / (99 Hz x 30 s) = 0.63 CPUs busy for 16 sessions executing: mostly off the CPU
    profile = _profile(16)
    note = waiting(profile)
    assert note is not None and note.sessions == 16 and note.busy_cpus == 0.63
    assert note.command == "pmuprof capture -p 25476 -d 30s --off-cpu"
    payload = _payload(profile)
    v = payload.verdict
    assert v["waiting"]["command"] == note.command and "mostly off the CPU" in v["waiting"]["sentence"]
    md = render_markdown(payload)
    first_screen = md.split("### Findings")[0]
    assert "**Mostly off the CPU:**" in first_screen and "`pmuprof capture -p 25476 -d 30s --off-cpu`" in first_screen
    assert "no known problem found" not in first_screen  # a waiting server is not called healthy


def test_the_note_is_in_the_html_first_screen(tmp_path):
    from pmuprof.report import write_outputs

    profile = _profile(16)
    diagnosis = diagnose(profile)
    paths = write_outputs(profile, diagnosis, tmp_path)
    html = paths["html"].read_text()
    verdict = html[html.index('id="verdict"') : html.index("</section>", html.index('id="verdict"'))]
    assert "Mostly off the CPU." in verdict and "pmuprof capture -p 25476 -d 30s --off-cpu" in verdict
    assert "healthy</span>" not in verdict


def test_no_note_when_the_sessions_were_on_the_cpu_or_off_cpu_was_recorded():
    assert waiting(_profile(1)) is None  # one session: a client's think time
    assert waiting(_profile(2, seconds=10.0)) is None  # 1.89 CPUs for 2 sessions: not mostly off the CPU
    assert waiting(_profile(2)) is not None  # 0.63 CPUs for 2 sessions: mostly off the CPU
    assert waiting(_profile(16, seconds=1.0)) is None  # 18.9 CPUs busy: on the CPU
    assert waiting(_profile(16, offcpu=OffCpu(requested=True, recorded=True))) is None
    assert waiting(_profile(16, offcpu=OffCpu(requested=True, recorded=False, why_not="not root"))) is not None
    assert _payload(_profile(1)).verdict["waiting"] is None


def test_the_command_is_the_capture_with_off_cpu():
    assert off_cpu_command(("pmuprof", "record", "-p", "7", "--no-off-cpu"), [7]) == "pmuprof record -p 7 --off-cpu"
    assert off_cpu_command((), [7, 8]) == "pmuprof capture -p 7 -p 8 --off-cpu"
    assert (
        off_cpu_command(("pmuprof", "capture", "-p", "7", "-o", "/tmp/a b"), [7])
        == "pmuprof capture -p 7 -o '/tmp/a b' --off-cpu"
    )
