"""A fresh Debian 12 root for the clean-root tier: built once (mmdebstrap, else debootstrap) and cached,
copied for each test, entered in a mount namespace of its own so no mount outlives a test."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

SUITE = "bookworm"  # Debian 12: what the README is written for
MIRROR = os.environ.get("PMUPROF_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SECURITY = os.environ.get("PMUPROF_DEBIAN_SECURITY", "http://deb.debian.org/debian-security")
BASE_MAX_AGE_S = 30 * 86400  # a month-old base is built again (its dpkg database ages with point releases)
DEB_CACHE_MAX = 3 * 2**30  # bytes of downloaded .deb files kept between runs
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Passed from the host into the root: how this host reaches package indexes (a proxy, a private index).
PASSED_ENV = ("http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
PASSED_ENV += ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST")
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
# A busy process with threads that also sleep: on-CPU samples and off-CPU waits to capture.
BUSY = "import threading, time\ndef f():\n    while True: sum(range(5000)); time.sleep(0.001)\nthreading.Thread(target=f).start(); f()"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pmuprof" / "cleanroot"


def why_not() -> str:
    """Why this host cannot run the tier ('' when it can): root, unshare, chroot and a root builder."""
    if os.geteuid() != 0:
        return "the clean-root tier needs root (chroot, mounts)"
    for tool in ("unshare", "chroot", "tar"):
        if not shutil.which(tool):
            return f"{tool} is missing"
    if not (shutil.which("mmdebstrap") or shutil.which("debootstrap")):
        return "neither mmdebstrap nor debootstrap is installed (apt-get install mmdebstrap)"
    return ""


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock on ``path`` (xdist workers and concurrent runs build the base once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def base_tarball(log: Path) -> Path:
    """The cached minimal root as a tar: `mmdebstrap --variant=minbase bookworm` (about 50 s here), else
    debootstrap's minbase (about 150 s) tarred. Rebuilt when older than BASE_MAX_AGE_S."""
    tar = cache_dir() / f"{SUITE}-minbase.tar"
    with _locked(cache_dir() / "base.lock"):
        if tar.is_file() and time.time() - tar.stat().st_mtime < BASE_MAX_AGE_S:
            return tar
        part = tar.with_name(tar.name + ".part")
        with open(log, "ab") as out:
            if shutil.which("mmdebstrap"):
                argv = ["mmdebstrap", "--variant=minbase", "--format=tar", SUITE, str(part), MIRROR]
                subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=True, timeout=1800)
            else:
                with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
                    argv = ["debootstrap", "--variant=minbase", SUITE, tmp, MIRROR]
                    subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=True, timeout=1800)
                    subprocess.run(["tar", "-C", tmp, "-cf", str(part), "."], check=True)
        os.replace(part, tar)
        return tar


HOST_SOURCES = Path("/etc/apt/sources.list.d/debian.sources")


def _sources() -> str:
    """This host's Debian 12 sources list, as any machine on its network has it (a local mirror), unless a
    mirror was named; else the stock one: the release, its updates and security (deb822)."""
    named = "PMUPROF_DEBIAN_MIRROR" in os.environ or "PMUPROF_DEBIAN_SECURITY" in os.environ
    if not named and HOST_SOURCES.is_file():
        text = HOST_SOURCES.read_text(encoding="utf-8", errors="replace")
        if re.search(rf"^Suites:.*\b{SUITE}\b", text, re.M):
            return text
    stanza = "Types: deb\nURIs: {}\nSuites: {}\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    return stanza.format(MIRROR, f"{SUITE} {SUITE}-updates") + "\n" + stanza.format(SECURITY, f"{SUITE}-security")


class CleanRoot:
    """One copy of the base root under ``parent``: enter it with :meth:`sh`; leaving kills what it started
    and deletes it. Mounts live in a private mount namespace of each :meth:`sh` call, so none can outlive it
    (not even when pytest is killed: the namespace dies with its last process)."""

    def __init__(self, parent: Path, name: str, log: Path):
        self.path = parent / name
        self.log = log
        self.seeded: set[str] = set()

    def __enter__(self) -> CleanRoot:
        self.path.mkdir(parents=True)
        tar = base_tarball(self.log)
        subprocess.run(["tar", "-C", str(self.path), "--numeric-owner", "-xpf", str(tar)], check=True)
        self._configure()
        self._seed_debs()
        return self

    def __exit__(self, *exc) -> None:
        self.kill_leftovers()
        self._harvest_debs()
        subprocess.run(["rm", "-rf", "--one-file-system", str(self.path)], check=False)

    def _configure(self) -> None:
        """What a new Debian 12 machine on this network has: its Debian sources list, this host's name
        server, and this host's CA bundle (a TLS-inspecting proxy's CA survives update-ca-certificates from
        /usr/local/share/ca-certificates). Apt answers yes as the person typing the README would."""
        etc = self.path / "etc"
        (etc / "apt" / "sources.list").unlink(missing_ok=True)
        (etc / "apt" / "sources.list.d" / "debian.sources").write_text(_sources())
        for name in ("resolv.conf", "hosts", "pip.conf"):
            if Path("/etc", name).is_file():
                (etc / name).unlink(missing_ok=True)  # resolv.conf may be a dangling link in the base
                shutil.copyfile(Path("/etc", name), etc / name)
        for conf in sorted(Path("/etc/apt/apt.conf.d").glob("*")):
            if conf.is_file() and "Acquire::http" in conf.read_text(errors="replace"):  # proxies, not docker's hooks
                shutil.copyfile(conf, etc / "apt" / "apt.conf.d" / conf.name)
        if HOST_CA.is_file():
            (etc / "ssl" / "certs").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(HOST_CA, etc / "ssl" / "certs" / "ca-certificates.crt")
            local = self.path / "usr" / "local" / "share" / "ca-certificates"
            local.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(HOST_CA, local / "host-bundle.crt")
        (etc / "apt" / "apt.conf.d" / "90pmuprof-assume-yes").write_text('APT::Get::Assume-Yes "true";\n')
        # The root is thrown away: dpkg need not fsync every file it unpacks (on a busy disk that is most of
        # an install's time). What is installed, and how, does not change.
        (etc / "dpkg" / "dpkg.cfg.d" / "pmuprof-unsafe-io").write_text("force-unsafe-io\n")

    def _seed_debs(self) -> None:
        """Hard-link the .deb files of earlier runs into the root's apt cache: apt checks each against its
        index (size and hash) and downloads what is missing or newer. Only files are shared, never a root."""
        archives = self.path / "var" / "cache" / "apt" / "archives"
        archives.mkdir(parents=True, exist_ok=True)
        for deb in (cache_dir() / "debs").glob("*.deb"):
            with contextlib.suppress(OSError):
                os.link(deb, archives / deb.name)
                self.seeded.add(deb.name)

    def _harvest_debs(self) -> None:
        store = cache_dir() / "debs"
        store.mkdir(parents=True, exist_ok=True)
        for deb in (self.path / "var" / "cache" / "apt" / "archives").glob("*.deb"):
            if deb.name not in self.seeded and not (store / deb.name).exists():
                with contextlib.suppress(OSError):
                    tmp = store / f".{deb.name}.part"
                    shutil.copyfile(deb, tmp)
                    os.replace(tmp, store / deb.name)
        kept = sorted(store.glob("*.deb"), key=lambda p: p.stat().st_mtime, reverse=True)
        total = 0
        for deb in kept:
            total += deb.stat().st_size
            if total > DEB_CACHE_MAX:
                deb.unlink(missing_ok=True)

    def sh(self, script: str, timeout: float = 900, env: dict[str, str] | None = None, cwd: str = "/root"):
        """Run ``script`` with /bin/sh -e inside the root, as root with a login's environment; the output goes
        to the log and is returned (stdout and stderr joined) in a CompletedProcess."""
        mounts = (
            f'set -e; R="{self.path}"; mount -t proc proc "$R/proc"; mount --rbind /sys "$R/sys"; '
            'mount --rbind /dev "$R/dev"; mount -t tmpfs tmpfs "$R/run"; '
            'mkdir -p "$R/run/lock"; '
            f'exec chroot "$R" /bin/sh -c \'cd "$1" && exec /bin/sh -ec "$2"\' chroot {cwd} "$0"'
        )
        full_env = {"PATH": PATH, "HOME": "/root", "LANG": "C.UTF-8", "USER": "root", "LOGNAME": "root"}
        full_env.update({k: v for k, v in os.environ.items() if k in PASSED_ENV})
        full_env.update(env or {})
        argv = ["unshare", "--mount", "--propagation", "private", "--kill-child=SIGKILL"]
        argv += ["/bin/sh", "-c", mounts, script]
        started = time.monotonic()
        with open(self.log, "a", encoding="utf-8") as out:
            out.write(f"\n### {self.path.name} $ {script}\n")
        # Output into a file, not a pipe: a process the script left behind cannot hold the call open.
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(argv, env=full_env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()  # --kill-child: the chroot's shell goes with it; kill_leftovers takes the rest
                code = proc.wait()
            finally:
                self.kill_leftovers()
            out.seek(0)
            text = out.read().decode("utf-8", "replace")
        if code == -signal.SIGKILL and time.monotonic() - started >= timeout:
            text += f"\n(timed out after {timeout:g} s)"
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(text + f"\n### exit {code} after {time.monotonic() - started:.1f} s\n")
        return subprocess.CompletedProcess(argv, code, text, "")

    def kill_leftovers(self) -> list[int]:
        """SIGKILL every process whose root directory is this root (a daemon a package started, a hung step)."""
        killed = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if os.readlink(entry / "root") == str(self.path):
                    os.kill(int(entry.name), signal.SIGKILL)
                    killed.append(int(entry.name))
            except OSError:
                continue
        return killed

    def file(self, inside: str) -> Path:
        """A path in the root, as the host sees it."""
        return self.path / inside.lstrip("/")

    def copy_tree(self, files: list[Path], source: Path, dest: str) -> None:
        """Copy ``files`` (relative to ``source``) to ``dest`` in the root, modes kept."""
        target = self.file(dest)
        for rel in files:
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / rel, target / rel, follow_symlinks=False)


def doctor_and_capture(root: CleanRoot, exe: str, name: str, where: str) -> dict:
    """`doctor --json` (every native program from ``where``), then a 3 s capture with off-CPU stacks."""
    doctor = root.sh(f"{exe} doctor --json --no-mysql -p $$ > /root/{name}-doctor.json")
    assert doctor.returncode == 0, doctor.stdout
    checks = {c["id"]: c for c in json.loads(root.file(f"/root/{name}-doctor.json").read_text())["checks"]}
    for program in ("helper", "folder", "perfdata", "offcpu"):
        assert checks[program]["ok"], checks[program]
        assert checks[program]["detail"].startswith(where), checks[program]  # the installed copy's own
    script = (
        f"python3 -c '{BUSY}' & P=$!\n"
        f"rc=0; {exe} capture -p $P -d 3s --no-mysql -q --off-cpu -o /root/{name}-run --json > /root/{name}.json || rc=$?\n"
        "kill $P; exit $rc"
    )
    done = root.sh(script, timeout=600)
    assert done.returncode in (0, 10, 20), done.stdout  # findings codes: a loaded CI host may be "saturated"
    summary = json.loads(root.file(f"/root/{name}.json").read_text())
    run = json.loads(root.file(f"/root/{name}-run/run.json").read_text())
    assert summary["samples"] > 0 and root.file(f"/root/{name}-run/report.html").is_file(), summary
    assert run["offcpu"]["recorded"] and run["offcpu"]["argv"][0].startswith(where), run["offcpu"]
    return run
