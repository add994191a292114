"""Offline facts: without server facts, the version comes from the server binary's own version string."""

from __future__ import annotations

from pmuprof.findings.facts import facts_for
from pmuprof.model.analysis import Analysis, Binary, Process
from pmuprof.model.profile import Profile

STACKS = {("mariadbd", "start_thread", "do_command"): 10}


def _profile(*binaries: Binary, exe: str = "") -> Profile:
    return Profile(
        STACKS, analysis=Analysis(processes=(Process("mariadbd", 7, "mariadbd", exe, 10),), binaries=binaries)
    )


def test_version_is_read_from_the_binary():
    facts = facts_for(
        _profile(Binary("/opt/m/bin/mariadbd", server_version="11.4.5-MariaDB"), exe="/opt/m/bin/mariadbd"), "mariadbd"
    )
    assert (facts.family, facts.version, facts.version_text) == ("mariadb", (11, 4, 5), "11.4.5-MariaDB")
    assert (
        facts.server_missing == "no mysql.json: server variables unknown; version 11.4.5-MariaDB read from the binary"
    )


def test_two_server_binaries_and_no_exe_leave_the_version_unknown():
    facts = facts_for(
        _profile(
            Binary("/a/mariadbd", server_version="11.4.5-MariaDB"),
            Binary("/b/mariadbd", server_version="10.11.19-MariaDB"),
        ),
        "mariadbd",
    )
    assert facts.version == ()
    one = facts_for(_profile(Binary("/a/mariadbd", server_version="11.4.5-MariaDB")), "mariadbd")
    assert one.version == (11, 4, 5)


def test_mysqld_names_mysql_only_when_its_binary_was_read_and_is_not_mariadb():
    """'mysqld' is MySQL's name and MariaDB's before 10.5: the name alone leaves the family unknown."""

    def family(*binaries: Binary) -> str | None:
        profile = Profile(
            {("mysqld", "start_thread", "do_command"): 10},
            analysis=Analysis(processes=(Process("mysqld", 7, "mysqld", "/usr/sbin/mysqld", 10),), binaries=binaries),
        )
        return facts_for(profile, "mysqld").family

    assert family() is None
    assert family(Binary("/usr/sbin/mysqld")) is None  # recorded, not found: nothing read
    assert family(Binary("/usr/sbin/mysqld", file="/usr/sbin/mysqld")) == "mysql"
    assert family(Binary("/usr/sbin/mysqld", file="/usr/sbin/mysqld", server_version="10.2.11-MariaDB")) == "mariadb"
    assert facts_for(_profile(), "mariadbd").family == "mariadb"


def test_report_facts_say_where_the_version_came_from():
    from pmuprof.findings.facts import server_version
    from pmuprof.report.facts import summary

    profile = _profile(
        Binary("/opt/m/bin/mariadbd", file="/opt/m/bin/mariadbd", server_version="11.4.5-MariaDB"),
        exe="/opt/m/bin/mariadbd",
    )
    assert server_version(profile) == ("11.4.5-MariaDB", "binary")
    assert (
        summary(profile, ["mariadbd"])["server_version"]
        == "11.4.5-MariaDB, read from its binary; variables and status unknown"
    )
    assert server_version(_profile()) == ("", "")
