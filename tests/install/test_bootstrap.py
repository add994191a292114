"""The README's first two commands in a fresh Debian 12 root, as a new user runs them: as root, in a clone. The
demo captures on its own; the test job's installation (an editable install of the clone) is followed by `doctor`
and a capture with off-CPU stacks, as every install path is."""

from __future__ import annotations

import pytest

from .cleanroot import CleanRoot, doctor_and_capture
from .doccmds import REPO, block

pytestmark = pytest.mark.cleanroot

CLONE = "/root/pmuprof"
# The test job's installation runs as written; then these tests rather than the whole suite (the suite runs on
# the test box itself): the C style (clang-format, a test-job package), the install hints and the docs' lists.
TEST_JOB_TESTS = ("tests/native/test_format.py", "tests/unit/test_install_hints.py", "tests/unit/test_install_docs.py")


def _tail(text: str, n: int = 4000) -> str:
    return text[-n:]


def test_the_readme_two_commands(tmp_path, checkout):
    demo, test = block("README.md", "Install and run: two commands").commands
    assert demo.startswith("sh bootstrap.sh demo ") and test.startswith("sh bootstrap.sh test "), (demo, test)
    with CleanRoot(tmp_path, "bootstrap", tmp_path / "bootstrap.log") as root:
        root.copy_tree(checkout, REPO, CLONE)
        done = root.sh(demo, cwd=CLONE, timeout=1800)  # no apt-get update first: bootstrap.sh does it
        assert done.returncode == 0, _tail(done.stdout)
        reports = sorted(root.file(CLONE).glob("pmuprof-demo-*/report.html"))
        assert len(reports) == 1 and "pmuprof: report:" in done.stdout, _tail(done.stdout)
        job = f"{test.split('#', 1)[0].strip()} {' '.join(TEST_JOB_TESTS)}"
        done = root.sh(job, cwd=CLONE, timeout=3600)
        assert done.returncode == 0 and " passed" in done.stdout, _tail(done.stdout)
        assert root.sh("command -v clang-format mmdebstrap chromium").returncode == 0  # the test job's packages
        # what the test job installed: `pmuprof` on PATH, the clone's own helpers (make -C native)
        doctor_and_capture(root, "pmuprof", "test-job", f"{CLONE}/native/build/")
