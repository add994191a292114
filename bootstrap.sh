#!/bin/sh
# Set up pmuprof on Debian 12 (as root) from this checkout, then run one job:
#   sh bootstrap.sh demo   # install everything, run `pmuprof demo` (the built-in workload)
#   sh bootstrap.sh test   # install everything, run the whole test suite (its tiers side by side: tests/run_tiers.py)
#   sh bootstrap.sh test PATH...   # install everything, run these tests (pytest's arguments)
set -eu
cd "$(dirname "$0")"
JOB="${1:-demo}"
if [ $# -gt 0 ]; then shift; fi

APT_PACKAGES="linux-perf build-essential pkg-config clang libpfm4-dev libdw-dev libelf-dev libcapstone-dev libiberty-dev \
  libbpf-dev mariadb-server mariadb-client sysbench gdb systemd python3-pip python3-venv"
# The test job also renders reports in a real browser and reads pprof exports back with Google's pprof;
# clang-format checks the C style, bpftool checks it leaves nothing attached;
# debuginfod-find for the debuginfod tests; Maven fetches MariaDB 10.2.11 and 11.4.5 (full symbols) for the
# second and third servers (11.4.5's mariadbd needs no library beyond mariadb-server's and systemd's);
# node_exporter scrapes the textfile metrics (policy-rc.d below keeps its service from starting too);
# mmdebstrap makes the fresh Debian 12 roots in which the clean-root tier (.ci/install) runs the install commands.
if [ "$JOB" = test ]; then
  APT_PACKAGES="$APT_PACKAGES chromium clang-format bpftool debuginfod prometheus-node-exporter mmdebstrap"
  command -v mvn >/dev/null 2>&1 || APT_PACKAGES="$APT_PACKAGES maven"
fi

need_apt=""
for pkg in $APT_PACKAGES; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need_apt="$need_apt $pkg"
done
if [ -n "$need_apt" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d keeps the distro's mariadb service from starting: pmuprof's tests start their own.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get install -y -qq --no-install-recommends $need_apt >/dev/null
  rm -f /usr/sbin/policy-rc.d
fi

PY="${PYTHON:-python3}"
make -C native >/dev/null
"$PY" -m pip install -q --root-user-action=ignore --disable-pip-version-check -e '.[test]' 2>/dev/null \
  || "$PY" -m pip install -q --break-system-packages -e '.[test]'

setup_pprof() {
  # Google's pprof from the Go module proxy, for the export round-trip test (skipped without Go).
  command -v go >/dev/null 2>&1 || return 0
  gobin="${XDG_CACHE_HOME:-$HOME/.cache}/pmuprof/gobin"
  [ -x "$gobin/pprof" ] || GOBIN="$gobin" GOFLAGS=-mod=mod go install github.com/google/pprof@latest >/dev/null 2>&1 || true
  [ -x "$gobin/pprof" ] && export PMUPROF_PPROF="$gobin/pprof"
  return 0
}

setup_speedscope() {
  # speedscope's file-format JSON schema from its npm package, for the export schema test (skipped without npm).
  command -v npm >/dev/null 2>&1 || return 0
  dir="${XDG_CACHE_HOME:-$HOME/.cache}/pmuprof/speedscope"
  [ -f "$dir/file-format-schema.json" ] && return 0
  tmp=$(mktemp -d) && mkdir -p "$dir" \
    && (cd "$tmp" && npm pack speedscope >/dev/null 2>&1) \
    && tar xzf "$tmp"/speedscope-*.tgz -C "$dir" --strip-components=3 package/dist/release/file-format-schema.json \
    || true
  rm -rf "$tmp"
  return 0
}

case "$JOB" in
  demo) exec "$PY" -m pmuprof demo ;;
  test) setup_pprof; setup_speedscope
    if [ $# -gt 0 ]; then exec "$PY" -m pytest -q -p no:cacheprovider "$@"; fi
    exec "$PY" tests/run_tiers.py ;;
  *) echo "usage: sh bootstrap.sh demo | test [PYTEST ARGS...]" >&2; exit 2 ;;
esac
