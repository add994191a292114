"""The --mysql-* options shared by commands that collect server facts (no command here)."""

from __future__ import annotations

import os
import re
from typing import Any
from collections.abc import Callable

import click

from ..capture.mysql.facts import MysqlOptions
from ..capture.mysql.mydefaults import ignored_files
from ..capture.mysql.tls import MODES, Tls
from ..errors import UsageError

_KEYS = (
    "mysql_socket",
    "mysql_host",
    "mysql_port",
    "mysql_user",
    "mysql_password_env",
    "defaults_file",
    "no_mysql",
    "defaults_extra_file",
    "defaults_group_suffix",
    "login_path",
    "no_defaults",
    "ssl_mode",
    "ssl_ca",
    "ssl_cert",
    "ssl_key",
)
_PATH_KEYS = ("mysql_socket", "defaults_file", "defaults_extra_file", "ssl_ca", "ssl_cert", "ssl_key")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PASSWORD_FIX = "export the password in a variable and pass its name (sudo -E keeps it), or use --defaults-file"


def _password_env(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The name of a set environment variable. Anything else may be the password itself, typed where the
    name belongs: refused without ever printing it (run.json and the report would have kept it)."""
    if value is None:
        return None
    if not _ENV_NAME.match(value):
        raise UsageError(
            "--mysql-password-env takes the NAME of an environment variable; the value given is "
            "not a name (not shown: it may be the password itself)",
            _PASSWORD_FIX,
        )
    if value not in os.environ:
        raise UsageError(
            "--mysql-password-env names a variable that is not set here (the name is not shown: it "
            "may be the password itself)",
            _PASSWORD_FIX,
        )
    return value


def mysql_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the server-connection options, spelled as the mysql client and pt-stalk spell them
    (-h host, -P port, -u user, -S socket, --defaults-file, --defaults-extra-file,
    --defaults-group-suffix, --login-path, --ssl-*), plus --mysql-password-env and --no-mysql.

    There is deliberately no password option: a password on a command line shows in ps,
    shell history and run.json. Use an option file (~/.my.cnf) or --mysql-password-env.
    """
    opts = [
        click.option(
            "-S",
            "--mysql-socket",
            "--socket",
            "mysql_socket",
            type=click.Path(dir_okay=False),
            default=None,
            help="Server unix socket (default: the target pid's socket, then option files, then "
            "/run/mysqld/mysqld.sock).",
        ),
        click.option(
            "-h",
            "--mysql-host",
            "--host",
            "mysql_host",
            default=None,
            help="Server host for TCP (instead of a socket). -h is the host, as for mysql; help is --help.",
        ),
        click.option(
            "-P",
            "--mysql-port",
            "--port",
            "mysql_port",
            type=click.IntRange(1, 65535),
            default=None,
            help="Server TCP port (3306).",
        ),
        click.option(
            "-u",
            "--mysql-user",
            "--user",
            "mysql_user",
            default=None,
            help="SQL user (default: option files, then the login name).",
        ),
        click.option(
            "--mysql-password-env",
            metavar="VAR",
            default=None,
            callback=_password_env,
            help="Name of an environment variable that holds the password (never the password itself).",
        ),
        click.option(
            "--defaults-file",
            type=click.Path(dir_okay=False),
            default=None,
            help="Read only this option file, like mysql --defaults-file.",
        ),
        click.option(
            "--defaults-extra-file",
            type=click.Path(dir_okay=False),
            default=None,
            help="Also read this option file (after the global ones, before ~/.my.cnf).",
        ),
        click.option(
            "--defaults-group-suffix",
            metavar="SUFFIX",
            default=None,
            help="Also read each group with SUFFIX appended: _prod reads [client_prod] too.",
        ),
        click.option(
            "--login-path",
            metavar="NAME",
            default=None,
            help="Read this group of ~/.mylogin.cnf (needs MySQL's my_print_defaults).",
        ),
        click.option("--no-defaults", is_flag=True, help="Read no option file."),
        click.option(
            "--ssl-mode",
            type=click.Choice(MODES, case_sensitive=False),
            default=None,
            help="TLS to the server, as mysql --ssl-mode (--ssl-ca alone means VERIFY_CA).",
        ),
        click.option("--ssl-ca", type=click.Path(dir_okay=False), default=None, help="CA certificate file (PEM)."),
        click.option(
            "--ssl-cert", type=click.Path(dir_okay=False), default=None, help="Client certificate file (PEM)."
        ),
        click.option("--ssl-key", type=click.Path(dir_okay=False), default=None, help="Client key file (PEM)."),
        click.option("--no-mysql", is_flag=True, help="Do not connect to the server; profile only."),
    ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def pop_mysql_options(kwargs: dict[str, Any]) -> MysqlOptions | None:
    """Remove the --mysql-* values from a command's kwargs; None when --no-mysql was given."""
    values = {key: kwargs.pop(key, None) for key in _KEYS}
    if values["no_mysql"]:
        return None
    mode = values["ssl_mode"].upper() if values["ssl_mode"] else None
    opts = MysqlOptions(
        socket=values["mysql_socket"],
        host=values["mysql_host"],
        port=values["mysql_port"],
        user=values["mysql_user"],
        password_env=values["mysql_password_env"],
        defaults_file=values["defaults_file"],
        defaults_extra_file=values["defaults_extra_file"],
        defaults_group_suffix=values["defaults_group_suffix"],
        login_path=values["login_path"],
        no_defaults=bool(values["no_defaults"]),
        tls=Tls(mode, values["ssl_ca"], values["ssl_cert"], values["ssl_key"]),
    )
    for path in ignored_files(opts.sources):  # as the mysql client says it
        click.echo(
            f"pmuprof: warning: option file {path} is world-writable: ignored, as the mysql client ignores it "
            f"(any local user could have put their own server or user in it; chmod o-w {path})",
            err=True,
        )
    return opts


def pop_mysql_argv(kwargs: dict[str, Any]) -> tuple[str, ...]:
    """Remove the server options from kwargs and spell them again as `pmuprof capture` arguments
    (for a unit or cron line). Paths become absolute: a timer does not run in this directory."""
    values = {key: kwargs.pop(key, None) for key in _KEYS}
    if values["mysql_password_env"]:
        raise UsageError(
            "--mysql-password-env cannot reach a scheduled run (its environment is not yours)",
            "put the password in a client option file and pass --defaults-file",
        )
    argv: list[str] = []
    for key in _KEYS:
        value = values[key]
        if key in ("no_mysql", "no_defaults"):
            argv += [f"--{key.replace('_', '-')}"] if value else []
        elif value not in (None, ""):
            if key in _PATH_KEYS:
                value = os.path.abspath(value)
            argv += [f"--{key.replace('_', '-')}", str(value)]
    return tuple(argv)
