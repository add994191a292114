"""The --mysql-* options shared by commands that collect server facts (no command here)."""

from __future__ import annotations

from typing import Any, Callable

import click

from ..capture.mysql.facts import MysqlOptions

_KEYS = ("mysql_socket", "mysql_host", "mysql_port", "mysql_user", "mysql_password_env", "defaults_file", "no_mysql")


def mysql_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add --mysql-socket/--mysql-host/--mysql-port/--mysql-user/--mysql-password-env/--defaults-file/--no-mysql.

    There is deliberately no --mysql-password: a password on a command line shows in ps,
    shell history and run.json. Use an option file (~/.my.cnf) or --mysql-password-env.
    """
    opts = [
        click.option("--mysql-socket", type=click.Path(dir_okay=False), default=None,
                     help="Server unix socket (default: the target pid's socket, then option files, then "
                          "/run/mysqld/mysqld.sock)."),
        click.option("--mysql-host", default=None, help="Server host for TCP (instead of a socket)."),
        click.option("--mysql-port", type=click.IntRange(1, 65535), default=None, help="Server TCP port (3306)."),
        click.option("--mysql-user", default=None, help="SQL user (default: option files, then the login name)."),
        click.option("--mysql-password-env", metavar="VAR", default=None,
                     help="Name of an environment variable that holds the password (never the password itself)."),
        click.option("--defaults-file", type=click.Path(dir_okay=False), default=None,
                     help="Read only this option file ([client]/[mysql] groups), like mysql --defaults-file."),
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
    return MysqlOptions(socket=values["mysql_socket"], host=values["mysql_host"], port=values["mysql_port"],
                        user=values["mysql_user"], password_env=values["mysql_password_env"],
                        defaults_file=values["defaults_file"])
