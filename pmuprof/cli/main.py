"""The ``pmuprof`` entry point: discovers one command per module and prints errors once."""

from __future__ import annotations

import importlib
import pkgutil
import sys

import click

from .. import __version__
from ..errors import PmuprofError
from .exitcodes import epilog


# -h is the MySQL host (as for mysql, mysqldump and pt-stalk) wherever the server options are; help is --help.
@click.group(context_settings={"help_option_names": ["--help"], "max_content_width": 100}, epilog=epilog())
@click.version_option(__version__, prog_name="pmuprof")
def cli() -> None:
    """Profile mysqld / mariadbd with perf and PMU counters, and name the hotspot.

    \b
    pmuprof capture -p $(pidof mariadbd)     # 30 s profile + report
    pmuprof report ./pmuprof-run             # rebuild the report offline
    pmuprof doctor                           # what works on this host, and fixes
    pmuprof demo                             # try it on the built-in workload
    """


def _register() -> None:
    """Each module in pmuprof.cli that defines COMMAND (a click command) becomes a subcommand."""
    package = importlib.import_module(__package__)
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name in ("main", "common") or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__package__}.{info.name}")
        command = getattr(module, "COMMAND", None)
        if command is not None:
            cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; a PmuprofError becomes one line on stderr and its exit code."""
    try:
        # without standalone mode click returns (not raises) the code of click.exceptions.Exit
        code = cli.main(args=argv, prog_name="pmuprof", standalone_mode=False)
    except PmuprofError as err:
        click.echo(f"pmuprof: error: {err}", err=True)
        return err.exit_code
    except click.exceptions.Abort:
        click.echo("pmuprof: interrupted", err=True)
        return 130
    except click.ClickException as err:
        err.show()
        return err.exit_code
    except click.exceptions.Exit as err:
        return err.exit_code
    except BrokenPipeError:
        return 0
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
