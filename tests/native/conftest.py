"""Native-helper fixtures: the built helper, skipping with the reason when a feature was compiled out."""

import pytest

from native_support import helper_binary, native_binary, need_features


@pytest.fixture(scope="module")
def decoding_helper():
    """pmuprof-helper with elfutils and capstone (symbols, .eh_frame, x86 decoding)."""
    path = helper_binary()
    need_features(path, "elfutils", "capstone")
    return path


@pytest.fixture(scope="session")
def fold_bin():
    """Build (or refresh) native/build/pmuprof-fold; skip when it cannot be built here."""
    return native_binary("pmuprof-fold")
