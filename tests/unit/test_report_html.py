"""report.html: hostile symbol names stay text, same input gives the same bytes, nothing loads from the network."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from report_fixtures import HOSTILE_SCRIPT, HOSTILE_TEMPLATE, findings, profile

from pmuprof.model.profile import Profile
from pmuprof.findings.diagnosis import Diagnosis
from pmuprof.report import write_outputs
from pmuprof.report.html import embed_json

EMBED = re.compile(r'<script type="application/json" id="pmuprof-data">(.*?)</script>', re.S)


def _write(tmp_path: Path, prof: Profile | None = None) -> str:
    paths = write_outputs(prof or profile(), Diagnosis.of(findings()), tmp_path)
    return paths["html"].read_text(encoding="utf-8")


def _embedded(text: str) -> dict:
    found = EMBED.findall(text)
    assert len(found) == 1, "the data is embedded exactly once"
    return json.loads(found[0])


def test_hostile_names_render_as_text(tmp_path):
    text = _write(tmp_path)
    assert "<img" not in text  # neither in the markup nor in the embedded JSON
    assert text.count("</script>") == text.count("<script")  # nothing closes a script early
    assert html.escape(HOSTILE_SCRIPT, quote=False) in text
    assert html.escape(HOSTILE_TEMPLATE, quote=False) in text
    assert "bad\\xff\\xfename" in text  # non-UTF-8 bytes shown as \xNN
    data = _embedded(text)
    assert HOSTILE_SCRIPT in data["flame"]["names"]
    assert HOSTILE_TEMPLATE in data["flame"]["names"]
    assert 'href="javascript:' not in text


def test_embed_json_escapes_line_separators():
    out = str(embed_json({"a": "x\u2028y\u2029</script>&"}))
    for raw in ("\u2028", "\u2029", "<", ">", "&"):
        assert raw not in out
    assert json.loads(out) == {"a": "x\u2028y\u2029</script>&"}


class _AsJson:
    def __init__(self, value) -> None:
        self.value = value

    def as_json(self):
        return self.value


@pytest.mark.parametrize("piece", [1, 3, 1 << 15])
def test_the_data_written_in_pieces_is_the_data_written_whole(monkeypatch, piece):
    """The page's JSON is written a key and a list slice at a time (issue 34: 80 MB as one string, twice):
    joined, it is exactly what one dumps and the escapes gave, for nested objects, long lists, objects
    with number keys, values with as_json, and every character the escapes or bidi controls touch."""
    from pmuprof.report import bidi, html as page

    monkeypatch.setattr(page, "_LIST_PIECE", piece)
    nasty = 'a<b>&c\u2028d\u2029e\u202ef\u2066"\\'
    data = _AsJson(
        {
            "z": [nasty, 1, 2.5, None, True, [3, 4, {"k": nasty}], _AsJson({"deep": [nasty] * 5})],
            "a": {str(i): list(range(i)) for i in range(7)},
            "m": {1: "one", 2: "two"},
            "e": {},
            "t": tuple(range(10)),
            nasty: "key",
        }
    )
    whole = bidi.visible_in_json(page.dumps(data))
    for raw, escaped in page._JSON_ESCAPES.items():
        whole = whole.replace(raw, escaped)
    assert "".join(page.json_pieces(data)) == whole == str(page.embed_json(data))
    assert len(list(page.json_pieces(data))) > 10


def test_same_input_gives_identical_bytes(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    write_outputs(profile(), Diagnosis.of(findings()), one)
    write_outputs(profile(), Diagnosis.of(reversed(findings())), two)
    for name in ("report.html", "findings.json", "report.md"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name


class _Attrs(HTMLParser):
    """Every (tag, attribute, value) of the parsed page: what a browser would act on."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag, attrs):
        self.found += [(tag, k, v or "") for k, v in attrs]


def test_report_loads_nothing_remote(tmp_path):
    text = _write(tmp_path)
    parser = _Attrs()
    parser.feed(text)
    assert not [a for a in parser.found if a[1] in ("src", "srcset", "action", "formaction", "poster")]
    tags = {t for t, _, _ in parser.found}
    assert not tags & {"img", "iframe", "link", "object", "embed"}
    assert "@import" not in text and "url(" not in text
    for tag, attr, url in parser.found:
        if attr == "href":
            assert url.startswith("#") or (
                tag == "a" and url == "https://mariadb.com/kb/en/innodb-system-variables/"
            ), url
    assert "default-src 'none'" in text  # the CSP forbids loads even if a link slipped in
    assert 'rel="noopener noreferrer"' in text


def test_sections_present(tmp_path):
    text = _write(tmp_path)
    for anchor in ("summary", "findings", "flamegraph", "top", "counters", "hotspots", "targets", "mysql", "run"):
        assert f'id="{anchor}"' in text, anchor
    assert "(multiplexed)" in text and "instructions / cycles" in text
    assert "SET GLOBAL innodb_spin_wait_delay = 6;" in text
    assert "perf recorded cpu-clock instead of cycles" in text


def test_bare_folded_profile_renders(tmp_path):
    bare = Profile({("mysqld", "main", "f"): 5}, source="x.folded")
    text = _write(tmp_path, bare)
    assert 'id="hotspots"' not in text and 'id="targets"' not in text
    assert "No server facts" in text and "No counters in this input" in text


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return name
    pytest.skip("no headless Chromium here (apt-get install chromium) to run the report's JavaScript")


def _dom(url: str) -> str:
    browser = _chromium()
    with tempfile.TemporaryDirectory() as profile_dir:
        return subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                f"--user-data-dir={profile_dir}",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        ).stdout


def test_javascript_runs_in_headless_chromium(tmp_path):
    _chromium()
    _write(tmp_path)
    dom = _dom((tmp_path / "report.html").as_uri() + "#search=ut_delay")
    assert '<div class="flame-crumb">Click a frame to zoom' in dom  # the flame script ran its set-up
    # ut_delay: 500 + 100 of 1007 samples, each counted once even where it nests under itself.
    assert f"matched {100 * 600 / 1007:.2f} % of samples" in dom
    drawn = re.search(r'id="flame"[^>]* data-drawn="(\d+)"', dom)
    assert drawn and int(drawn.group(1)) >= 10  # every frame of the small fixture is drawn, no script error
    assert "<img" not in dom  # hostile names never became elements
