"""Skid correction on bad input: unknown symbol, offsets past the end, missing / non-ELF / non-x86 binaries."""

from __future__ import annotations

import shutil

import pytest

from native_support import PROGS, compile_prog, elf_symbols, run_helper


@pytest.fixture(scope="module")
def helper(decoding_helper):
    return decoding_helper


@pytest.fixture(scope="module")
def exe(tmp_path_factory):
    return compile_prog(PROGS / "placements.c", tmp_path_factory.mktemp("err") / "pl", "gcc", "-O2")


def test_unknown_symbol_is_a_per_function_error(helper, exe):
    rc, data = run_helper(helper, "skid", "--binary", str(exe), stdin="no_such_fn\t0\t3\nloop_pause\t0\t2\n")
    assert rc == 0, "one good function keeps the exit status 0"
    bad = [f for f in data["functions"] if f.get("requested") == "no_such_fn"][0]
    assert "not found" in bad["error"] and bad["samples"] == 3
    assert data["function_errors"] == 1
    rc, data = run_helper(helper, "skid", "--binary", str(exe), stdin="no_such_fn\t0\t3\n")
    assert rc != 0 and data["functions"][0]["error"]


def test_offset_past_end_is_counted_not_placed(helper, exe):
    size = elf_symbols(exe)["loop_pause"][1]
    rc, data = run_helper(helper, "skid", "--binary", str(exe), stdin=f"loop_pause\t{size:x}\t4\nloop_pause\t0\t1\n")
    fn = data["functions"][0]
    assert fn["past_end_samples"] == 4 and fn["samples"] == 1
    assert "past the function end" in fn["error"]
    assert sum(i["raw"] for i in fn["instructions"]) == sum(i["corrected"] for i in fn["instructions"]) == 1


def test_missing_binary(helper, tmp_path):
    rc, data = run_helper(helper, "skid", "--binary", str(tmp_path / "gone"), stdin="f\t0\t1\n")
    assert rc != 0 and data["error"] == "binary not found"


def test_not_elf(helper, tmp_path):
    path = tmp_path / "text"
    path.write_text("hello\n")
    rc, data = run_helper(helper, "skid", "--binary", str(path), stdin="f\t0\t1\n")
    assert rc != 0 and data["error"] == "not an ELF file"


def test_non_x86_binary(helper, exe, tmp_path):
    arm = tmp_path / "arm"
    shutil.copy(exe, arm)
    raw = bytearray(arm.read_bytes())
    raw[18:20] = (183).to_bytes(2, "little")  # e_machine = EM_AARCH64
    arm.write_bytes(bytes(raw))
    rc, data = run_helper(helper, "skid", "--binary", str(arm), stdin="f\t0\t1\n")
    assert rc != 0 and data["error"] == "not an x86-64 binary"


def test_malformed_line_names_the_line(helper, exe):
    rc, data = run_helper(helper, "skid", "--binary", str(exe), stdin="loop_pause\t0\t1\nloop_pause zz\n")
    assert rc != 0 and data["line"] == 2


def test_python_wrapper_raises_helper_error(helper, tmp_path, monkeypatch):
    from pmuprof.tools.native import helper as pyhelper
    from pmuprof.errors import HelperError

    monkeypatch.setenv("PMUPROF_HELPER", str(helper))
    with pytest.raises(HelperError) as err:
        pyhelper.skid(tmp_path / "gone", [("f", 0, 1)])
    assert "binary not found" in str(err.value) and err.value.fix
    monkeypatch.setenv("PMUPROF_HELPER", "")
    with pytest.raises(HelperError) as err:
        pyhelper.calibrate_pause()
    assert "not built" in err.value.message and "make -C native" in err.value.fix
    assert pyhelper.features_off()[0]["feature"] == "native helper"
