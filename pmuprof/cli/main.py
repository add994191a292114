"""The ``pmuprof`` entry point: discovers one command per module and prints errors once."""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import click

from .. import __version__, memory, outfile, signals
from ..errors import PmuprofError
from . import streams

EXIT_INTERNAL = 1  # a bug in pmuprof (docs/usage.md: exit codes)


# The modules of pmuprof.cli that each define COMMAND, a subcommand of the same name (a test checks the list).
COMMANDS = (
    "annotate",
    "capture",
    "demo",
    "diff",
    "doctor",
    "export",
    "history",
    "man",
    "record",
    "report",
    "rules",
    "schedule",
    "watch",
)


class _Commands(click.Group):
    """Subcommands imported when used: ``pmuprof report`` does not pay for capture's or schedule's imports."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMANDS) | set(self.commands))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in COMMANDS and name not in self.commands:
            self.add_command(importlib.import_module(f"{__package__}.{name}").COMMAND)
        return self.commands.get(name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in COMMANDS:  # a typo: load them all, so click's error suggests the near names
            for name in COMMANDS:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from .exitcodes import epilog  # the exit-code table imports every workflow: only for --help

        self.epilog = self.epilog or epilog()
        super().format_epilog(ctx, formatter)


# -h is the MySQL host (as for mysql, mysqldump and pt-stalk) wherever the server options are; help is --help.
@click.group(cls=_Commands, context_settings={"help_option_names": ["--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="pmuprof")
def cli() -> None:
    """Profile mysqld / mariadbd with perf and PMU counters, and name the hotspot.

    \b
    pmuprof capture -p $(pidof mariadbd)     # 30 s profile + report
    pmuprof report ./pmuprof-run             # rebuild the report offline
    pmuprof doctor                           # what works on this host, and fixes
    pmuprof demo                             # try it on the built-in workload
    """


def save_traceback(text: str) -> Path | None:
    """Write a traceback to $XDG_CACHE_HOME/pmuprof/errors/ (~/.cache/...), else to a new file in $TMPDIR."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pmuprof" / "errors"
    try:
        return outfile.write_text(outfile.ensure_dir(base) / f"error-{stamp}-{os.getpid()}.log", text)
    except (PmuprofError, OSError, RuntimeError):
        pass
    try:
        fd, name = tempfile.mkstemp(prefix=f"pmuprof-error-{stamp}-", suffix=".log")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        return Path(name)
    except OSError:
        return None


def _internal_error(err: BaseException) -> int:
    """A bug: one line on the terminal, the traceback in a file."""
    from ..model.run import redact_command  # no password in a file the user is asked to send

    text = (
        f"pmuprof {__version__}, Python {sys.version.split()[0]}\nargv: {list(redact_command(sys.argv))!r}\n\n"
        + "".join(traceback.format_exception(type(err), err, err.__traceback__))
    )
    path = save_traceback(text)
    where = f"traceback in {path}" if path else "the traceback could not be saved"
    first = (str(err).splitlines() or [""])[0][:200]
    click.echo(f"pmuprof: internal error: {type(err).__name__}: {first} ({where}; please report it)", err=True)
    return EXIT_INTERNAL


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; every outcome is one line on stderr and an exit code from the exit-code table (docs/usage.md)."""
    memory.release_large_blocks()
    streams.guard()  # a reader that goes away (| head -1) costs its output, never the report
    with signals.installed():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    try:
        # without standalone mode click returns (not raises) the code of click.exceptions.Exit
        code = cli.main(args=argv, prog_name="pmuprof", standalone_mode=False)
    except PmuprofError as err:
        click.echo(f"pmuprof: error: {err}", err=True)
        return err.exit_code
    except signals.STOPS as err:
        click.echo(f"pmuprof: interrupted ({signals.name_of(err)})", err=True)
        return err.exit_code if isinstance(err, signals.StopSignal) else 130
    except click.exceptions.Abort:
        click.echo("pmuprof: interrupted", err=True)
        return 130
    except click.ClickException as err:
        err.show()
        return err.exit_code
    except click.exceptions.Exit as err:
        return err.exit_code
    except BrokenPipeError:  # stdout closed early (| head): quiet, and no second error at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as err:  # noqa: BLE001 - the last resort: no traceback reaches the terminal
        return _internal_error(err)
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
