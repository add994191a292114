"""Issue 26 item 9: bidi controls (U+202E ...) in database, thread, statement and frame names cannot
reorder a report's text: HTML (template text, the embedded data, the inline SVG) and Markdown show
them as escapes."""

from __future__ import annotations

import io
import json

from pmuprof.model import rundir
from pmuprof.model.folded import write_folded
from pmuprof.model.samples import from_keyed, write_tsv
from pmuprof.model.stacks import Stacks
from pmuprof.report import bidi

RLO, LRI = "\u202e", "\u2066"
THREAD = f"conn{RLO}exe.gnp"  # shows as "connpng.exe"
DIVE = ("mysqld", THREAD, "do_command", f"btr_estimate{LRI}_n_rows", "ut_delay")
SCAN = ("mysqld", THREAD, "do_command", "row_search_mvcc")
PLIST = (
    "# pmuprof processlist: second\ttid\tid\tuser\tdb\tcommand\tstate\ttime\tdigest\n"
    f"100\t11\t1\tapp{RLO}nimda\tshop{RLO}gnp\tQuery\tstatistics\t0\tSELECT ? FROM `t{RLO}1`\n"
    f"100\t12\t2\tapp\tshop\tQuery\tSending{LRI} data\t0\tSELECT c FROM t\n"
)


def _run_dir(path):
    path.mkdir()
    stacks = Stacks.of({DIVE: 72, SCAN: 78})
    keyed = {(DIVE, 11, 100): 72, (SCAN, 11, 100): 28, (SCAN, 12, 100): 50}
    (path / "run.json").write_text(
        json.dumps({"pmuprof_version": "0.2.0", "schema": 2, "duration_s": 5.0, "started": "2026-01-01T03:00:00Z"})
    )
    with open(path / "stacks.folded", "w", encoding="utf-8") as out:
        order = write_folded(out, stacks)
    text = io.StringIO()
    write_tsv(text, from_keyed(stacks, keyed), order)
    (path / "samples.tsv").write_text(text.getvalue())
    (path / rundir.PROCESSLIST).write_text(PLIST, encoding="utf-8")
    return path


def test_bidi_controls_show_as_escapes_in_html_and_markdown(pmuprof, tmp_path):
    run = _run_dir(tmp_path / "run")
    res = pmuprof("report", run, "--force")
    assert res.code == 0, res.err
    for name in ("report.html", "report.md"):
        text = (run / name).read_text(encoding="utf-8")
        raw = sorted({f"U+{ord(c):04X}" for c in text if c in bidi.CONTROLS})
        assert not raw, f"{name} holds raw bidi controls {raw}"
        assert "\\u202e" in text, f"{name} does not show the names at all"
    md = (run / "report.md").read_text(encoding="utf-8")
    assert "conn\\u202eexe.gnp" in md and "Sending\\u2066 data" in md  # thread name, processlist state
    # the page's data decodes to the visible escape, the JSON writer keeps the names as they are
    html = (run / "report.html").read_text(encoding="utf-8")
    assert "\\\\u202e" in html
    assert RLO in (run / "findings.json").read_text(encoding="utf-8")


def test_visible_and_finalize_keep_markup_and_other_values():
    from markupsafe import Markup

    assert bidi.visible(f"a{RLO}b\u200fc") == "a\\u202eb\\u200fc"
    kept = bidi.finalize(Markup(f"<text>x{RLO}</text>"))
    assert isinstance(kept, Markup) and str(kept) == "<text>x\\u202e</text>"
    assert bidi.finalize(3) == 3 and bidi.finalize(None) is None
    assert json.loads(bidi.visible_in_json(json.dumps({"k": RLO}, ensure_ascii=False))) == {"k": "\\u202e"}
