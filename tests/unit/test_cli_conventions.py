"""CLI habits: -h is the MySQL host, one duration syntax, --json where a command reports, exit codes, man page."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import click
import pytest

from pmuprof.errors import UsageError
from click.testing import CliRunner

from helpers import REPO
from pmuprof.cli.exitcodes import exit_codes
from pmuprof.cli.main import COMMANDS, cli, main
from pmuprof.cli.man import man_page
from pmuprof.cli.params import Duration
from pmuprof.errors import PmuprofError

MAN = REPO / "docs" / "pmuprof.1"
REPORTING = ("capture", "record", "report", "diff", "annotate", "doctor", "history", "rules list", "schedule status")


def _commands(group: click.Group = cli, prefix: str = ""):
    ctx = click.Context(group)
    for name, cmd in ((n, group.get_command(ctx, n)) for n in group.list_commands(ctx)):
        path = f"{prefix}{name}"
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, path + " ")
        else:
            yield path, cmd


def test_every_command_module_is_listed_and_a_report_imports_no_capture_code():
    """COMMANDS names each module of pmuprof.cli that defines COMMAND; `report` leaves the others unimported."""
    package = REPO / "pmuprof" / "cli"
    defining = sorted(
        p.stem for p in package.glob("*.py") if re.search(r"^(COMMAND = |def COMMAND\()", p.read_text(), re.M)
    )
    assert list(COMMANDS) == defining
    probe = (
        "import sys; from pmuprof.cli.main import cli; cli.get_command(None, 'report'); "
        "print(sorted(m for m in sys.modules if m.startswith('pmuprof.')))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True).stdout
    assert "pmuprof.cli.report" in loaded and "pmuprof.cli.capture" not in loaded
    assert "pmuprof.workflows.schedule" not in loaded


def test_dash_h_is_never_help():
    """-h is the server host where server options exist, and an error elsewhere: never help + exit 0."""
    for path, cmd in _commands():
        names = {n for p in cmd.params for n in getattr(p, "opts", [])}
        result = CliRunner().invoke(cli, [*path.split(), "-h"])
        assert result.exit_code == 2, (path, result.output)
        assert "Error:" in result.output and "Options:" not in result.output, path  # an error, not the help
        if "--mysql-host" in names:
            host = next(p for p in cmd.params if "--mysql-host" in getattr(p, "opts", []))
            assert "-h" in host.opts, path
    assert CliRunner().invoke(cli, ["capture", "--help"]).exit_code == 0


@pytest.mark.parametrize(
    "text, seconds",
    [("30", 30.0), ("30s", 30.0), ("500ms", 0.5), ("5m", 300.0), ("1h", 3600.0), ("1.5m", 90.0), (45, 45.0)],
)
def test_duration_syntax(text, seconds):
    assert Duration().convert(text, None, None) == seconds


@pytest.mark.parametrize("text", ["10x", "m5", "", "-3s", "1h30m"])
def test_duration_rejects(text):
    """One line (pmuprof's UsageError, exit 2), not click's usage screen."""
    with pytest.raises(UsageError, match="expected a number"):
        Duration().convert(text, None, None)


def test_duration_bounds():
    with pytest.raises(UsageError, match="2h is out of range") as err:
        Duration(1, 3600).convert("2h", None, None)
    assert err.value.fix == "use 1s to 1h"
    with pytest.raises(UsageError, match="500ms is out of range"):
        Duration(1, 3600).convert("500ms", None, None)


def test_every_duration_option_uses_the_one_type():
    seen = []
    for path, cmd in _commands():
        for param in cmd.params:
            if param.name == "spin_wait_delay":  # innodb_spin_wait_delay's units, not a time
                continue
            if any(word in (param.name or "") for word in ("duration", "interval", "cooldown", "timeout", "delay")):
                assert isinstance(param.type, Duration), (path, param.name, param.type)
                seen.append(f"{path} --{param.name}")
    assert {
        "capture --duration",
        "record --duration",
        "demo --duration",
        "watch --interval",
        "watch --duration",
        "watch --cooldown",
        "schedule install --duration",
        "schedule install --randomized_delay",
    } <= set(seen)


def test_capture_accepts_minutes_and_refuses_past_an_hour(capsys):
    code = main(["capture", "-d", "2h", "-p", "1"])
    assert code == 2 and "--duration 2h is out of range" in capsys.readouterr().err


def test_every_reporting_command_has_json():
    commands = dict(_commands())
    for path in REPORTING:
        assert any("--json" in getattr(p, "opts", []) for p in commands[path].params), path


def test_exit_codes_in_help_match_the_error_types():
    result = CliRunner().invoke(cli, ["--help"])
    assert "Exit codes:" in result.output
    codes = dict(exit_codes())
    todo = list(PmuprofError.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        assert cls.exit_code in codes, cls
    for code in (0, 2, 5, 9, 10, 20, 129, 130, 143):
        assert f"\n  {code:<4} " in result.output.replace("\n    ", "\n  "), code
    assert "143  stopped by SIGTERM" in result.output and "SIGTERM" not in codes[130]  # 128 + 15, not 130


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "/nonexistent/run"],
        ["diff", "/nonexistent/a", "/nonexistent/b"],
        ["export", "/nonexistent/run"],
        ["history", "/nonexistent/runs"],
        ["annotate", "/nonexistent/run", "--symbol", "f"],
    ],
)
def test_a_missing_input_is_exit_3_in_one_line(argv, capsys):
    """The README's table: 3 is a bad input, missing included (click's own check said 2 with a usage screen)."""
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "/nonexistent/" in err and "no such file or directory" in err, err


def test_doctor_strict_exits_9_on_a_miss_and_json_lists_checks(monkeypatch, capsys):
    monkeypatch.setenv("PMUPROF_PERF", "/nonexistent/perf")
    assert main(["doctor", "--strict", "--no-mysql", "-o", str(REPO)]) == 9
    assert "MISS perf" in capsys.readouterr().out
    assert main(["doctor", "--json", "--no-mysql", "-o", str(REPO)]) == 0  # without --strict a MISS is not an error
    import json

    doc = json.loads(capsys.readouterr().out)
    perf = next(c for c in doc["checks"] if c["name"] == "perf")
    assert doc["ok"] is False and perf["ok"] is False and "linux-perf" in perf["fix"]


def test_man_page_is_generated_from_the_cli_and_committed_fresh():
    text = man_page(cli)
    assert MAN.read_text() == text, "docs/pmuprof.1 is stale: python3 -m pmuprof man > docs/pmuprof.1"
    for path, _ in _commands():
        assert path == "man" or f".SS pmuprof {path}" in text.replace("\\-", "-"), path
    assert "\\fB\\-h, \\-\\-mysql\\-host, \\-\\-host TEXT\\fR" in text


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff not installed (apt-get install groff-base)")
def test_man_page_renders_without_warnings():
    proc = subprocess.run(["groff", "-man", "-ww", "-z", str(MAN)], capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr


def test_shell_completion_as_the_readme_documents_it():
    from helpers import run_cli

    res = run_cli(
        env={"_PMUPROF_COMPLETE": "bash_complete", "COMP_WORDS": "pmuprof capture --ssl-m", "COMP_CWORD": "2"}
    )
    assert res.returncode == 0 and "plain,--ssl-mode" in res.stdout.splitlines()
    script = run_cli(env={"_PMUPROF_COMPLETE": "bash_source"})
    assert "complete -o nosort -F _pmuprof_completion pmuprof" in script.stdout


def test_a_mistyped_command_gets_the_near_names():
    result = CliRunner().invoke(cli, ["repor"])
    assert result.exit_code == 2 and "Did you mean" in result.output and "'report'" in result.output
