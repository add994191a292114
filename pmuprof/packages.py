"""Which Debian packages add each optional feature: the one table every install hint is made from."""

from __future__ import annotations

# feature -> Debian 12 packages. native/Makefile probes elfutils, capstone and libbpf with
# pkg-config, so those features name it; libpfm4 and libiberty are probed by a test link.
PACKAGES: dict[str, tuple[str, ...]] = {
    "perf": ("linux-perf",),  # perf itself
    "compiler": ("gcc", "make", "libc6-dev"),  # any native program; pmuprof-fold and the demo need nothing more
    "libpfm4": ("libpfm4-dev",),  # pmuprof-helper: PMU events by name
    "elfutils": ("pkg-config", "libdw-dev", "libelf-dev"),  # pmuprof-helper: symbols, skid; pmuprof-perfdata
    "capstone": ("pkg-config", "libcapstone-dev"),  # pmuprof-helper: x86 decoding (PAUSE, skid correction)
    "libiberty": ("libiberty-dev",),  # pmuprof-perfdata: C++ demangling as perf does it
    "bpf": ("pkg-config", "clang", "libbpf-dev"),  # pmuprof-offcpu: the BPF off-CPU tracer
    "debuginfod": ("debuginfod",),  # debuginfod-find, for DEBUGINFOD_URLS
}
# What each native program needs to be built at all.
HELPER = ("compiler", "libpfm4", "elfutils", "capstone")
PERFDATA = ("compiler", "elfutils", "libiberty")
OFFCPU = ("compiler", "bpf", "elfutils")  # elfutils: the CFI unwinder of leaves without frame pointers
NATIVE = HELPER + PERFDATA + OFFCPU  # every native program with every feature

# feature -> the Debian 12 runtime packages a host that installs a built wheel needs (what `ldd` of
# the helpers resolves to; no compiler, no -dev package). libiberty is linked in statically.
RUNTIME: dict[str, tuple[str, ...]] = {
    "perf": ("linux-perf",),
    "compiler": (),  # pmuprof-fold needs only libc
    "libpfm4": ("libpfm4",),
    "elfutils": ("libelf1", "libdw1"),
    "capstone": ("libcapstone4",),
    "libiberty": (),
    "bpf": ("libbpf1",),
    "debuginfod": ("debuginfod",),
}


def packages(*features: str) -> tuple[str, ...]:
    """The packages of these features, each once, in table order."""
    return tuple(dict.fromkeys(p for feature in features for p in PACKAGES[feature]))


def apt_install(*features: str) -> str:
    """'apt-get install PKG ...' for these features."""
    return "apt-get install " + " ".join(packages(*features))


def runtime_packages(*features: str) -> tuple[str, ...]:
    """The runtime packages of these features (a wheel host's view), each once, in table order."""
    return tuple(dict.fromkeys(p for feature in features for p in RUNTIME[feature]))


def apt_install_runtime(*features: str) -> str:
    """'apt-get install PKG ...' of the runtime packages of these features."""
    return "apt-get install " + " ".join(runtime_packages(*features))


# A library the dynamic loader may not find (its soname) -> the runtime package that holds it.
LIBRARIES = {
    "libpfm.so.4": "libpfm4",
    "libelf.so.1": "libelf1",
    "libdw.so.1": "libdw1",
    "libcapstone.so.4": "libcapstone4",
    "libbpf.so.1": "libbpf1",
}

# The README's two install lines: the build host makes the wheel, the database host runs it.
BUILD_HOST = packages(*NATIVE) + ("python3-venv", "python3-pip")
DATABASE_HOST = runtime_packages("perf", *NATIVE) + ("pipx",)
