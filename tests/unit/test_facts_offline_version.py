"""Offline facts: without server facts, the version comes from the server binary's own version string."""

from __future__ import annotations

from pmuprof.findings.facts import facts_for
from pmuprof.model.analysis import Analysis, Binary, Process
from pmuprof.model.profile import Profile

STACKS = {("mariadbd", "start_thread", "do_command"): 10}


def _profile(*binaries: Binary, exe: str = "") -> Profile:
    return Profile(STACKS, analysis=Analysis(processes=(Process("mariadbd", 7, "mariadbd", exe, 10),),
                                             binaries=binaries))


def test_version_is_read_from_the_binary():
    facts = facts_for(_profile(Binary("/opt/m/bin/mariadbd", server_version="11.4.5-MariaDB"),
                               exe="/opt/m/bin/mariadbd"), "mariadbd")
    assert (facts.family, facts.version, facts.version_text) == ("mariadb", (11, 4, 5), "11.4.5-MariaDB")
    assert facts.server_missing == "no mysql.json: server variables unknown; version 11.4.5-MariaDB read from the binary"


def test_two_server_binaries_and_no_exe_leave_the_version_unknown():
    facts = facts_for(_profile(Binary("/a/mariadbd", server_version="11.4.5-MariaDB"),
                               Binary("/b/mariadbd", server_version="10.11.19-MariaDB")), "mariadbd")
    assert facts.version == ()
    one = facts_for(_profile(Binary("/a/mariadbd", server_version="11.4.5-MariaDB")), "mariadbd")
    assert one.version == (11, 4, 5)
