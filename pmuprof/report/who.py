"""Which server process a finding is about, in words: its pid, where it listens, its datadir, its version.

On a host running several servers (a system-wide recording, several -p) a verdict that names only
"mariadbd" names none of them. The words come from what the input says of that process alone: its own
server facts (mysql.json, kept only when proven to be that pid's), else what the capture read from /proc
(run.json targets: endpoints, datadir), and its version from the server or from its own binary.
"""

from __future__ import annotations

from ..findings.facts import facts_for
from ..model.profile import Profile
from ..model.server import FAMILY_NAMES


def server_version_of(profile: Profile, label: str) -> str:
    """'MariaDB 11.4.5-MariaDB': the version of this process's own server ("" when not known)."""
    facts = facts_for(profile, label)
    if not facts.version_text:
        return ""
    return f"{FAMILY_NAMES.get(facts.family or '', '')} {facts.version_text}".strip()


def who(profile: Profile, label: str) -> str:
    """'mariadbd pid 1234: MariaDB 11.4.5-MariaDB, socket /tmp/a.sock, tcp 127.0.0.1:3307, datadir /d' ("" none)."""
    if not label:
        return ""
    facts = facts_for(profile, label)
    target, info = profile.target(label), profile.process_info(label)
    pid = target.pid if target else (info.pid if info else None)
    comm = (target.comm if target else "") or (info.comm if info else "") or label
    parts = [server_version_of(profile, label)] if facts.version_text else []
    server = facts.server
    if server is not None:
        socket, port, datadir = (server.variable(k) for k in ("socket", "port", "datadir"))
        parts += [f"socket {socket}"] if socket else []
        parts += [f"port {port}"] if port and port != "0" else []
        parts += [f"datadir {datadir}"] if datadir else []
    elif target is not None:
        parts += [target.endpoints] if target.endpoints else []
        parts += [f"datadir {target.datadir}"] if target.datadir else []
    exe = target.exe if target else (info.binary if info else "")
    if exe and not facts.version_text:
        parts.append(f"binary {exe}")
    head = f"{comm} pid {pid}" if pid is not None else comm
    return head + (": " + ", ".join(parts) if parts else "")
