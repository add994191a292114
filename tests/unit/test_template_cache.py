"""Compiled templates are cached only in a directory this user alone can write."""

import os

from pmuprof.report import html


def test_cache_in_own_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("PMUPROF_CACHE", str(tmp_path / "c"))
    cache = html._bytecode_cache()
    assert cache is not None
    where = tmp_path / "c" / "templates"
    assert where.is_dir() and not where.stat().st_mode & 0o077
    env = html.environment.__wrapped__(str(tmp_path / "t"))  # a fresh environment, not the cached one
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "x.html").write_text("{{ 1 + 1 }}")
    assert env.get_template("x.html").render() == "2"
    assert list(where.iterdir()), "the compiled template was kept"


def test_no_cache_where_others_can_write(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    (shared / "templates").mkdir(parents=True)
    os.chmod(shared / "templates", 0o777)
    monkeypatch.setenv("PMUPROF_CACHE", str(shared))
    assert html._bytecode_cache() is None


def test_unwritable_cache_is_only_slower(tmp_path, monkeypatch):
    monkeypatch.setenv("PMUPROF_CACHE", str(tmp_path / "file"))
    (tmp_path / "file").write_text("not a directory")
    assert html._bytecode_cache() is None
