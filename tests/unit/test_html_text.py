"""Text helpers of the HTML report: `code` spans and soft breaks, escaped before any markup is added."""

from __future__ import annotations

from html.parser import HTMLParser

from markupsafe import Markup

from pmuprof.report.html import code_spans, environment, soft_breaks


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.code: list[str] = []
        self._in_code = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._in_code = tag == "code"

    def handle_endtag(self, tag):
        self._in_code = False

    def handle_data(self, data):
        if self._in_code:
            self.code.append(data)


def _parse(markup: str) -> _Tags:
    p = _Tags()
    p.feed(markup)
    p.close()
    return p


def test_paired_backticks_become_code():
    out = code_spans("72 % of the samples of threads in `statistics` were in btr_estimate")
    assert isinstance(out, Markup)
    assert out == "72 % of the samples of threads in <code>statistics</code> were in btr_estimate"


def test_hostile_name_stays_text_and_unpaired_backticks_stay_literal():
    hostile = "x`</code><script>alert(1)</script>"
    out = code_spans(f"threads in `{hostile}` were in f` & `g")
    parsed = _parse(str(out))
    assert "script" not in parsed.tags and set(parsed.tags) == {"code"}
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert out.count("<code>") == out.count("</code>") == 2  # `x`, then `...were in f`; the last ` is unpaired
    assert str(out).endswith("g")  # nothing after the unpaired backtick was dropped
    assert "`" in out.replace("<code>", "").replace("</code>", "")


def test_no_backticks_is_escaped_text():
    assert code_spans("a < b & c") == "a &lt; b &amp; c"
    assert code_spans("``") == "``"  # an empty span is not code
    assert code_spans("`a\nb`") == "`a\nb`"  # a span does not cross a line


def test_the_filter_is_in_the_environment():
    env = environment()
    assert env.from_string("{{ s|code_spans }}").render(s="in `<b>`") == "in <code>&lt;b&gt;</code>"


def test_soft_breaks_after_separators_only_in_the_raw_text():
    assert soft_breaks("latin1,utf8mb4;binary, x") == "latin1,<wbr>utf8mb4;<wbr>binary, x"
    assert soft_breaks("innodb_sync_spin_loops") == "innodb_<wbr>sync_<wbr>spin_<wbr>loops"
    assert soft_breaks("ibdata1:12M:autoextend") == "ibdata1:<wbr>12M:<wbr>autoextend"
    assert soft_breaks("<a>&b;,c") == "&lt;a&gt;&amp;b;<wbr>,<wbr>c"  # no <wbr> inside &lt; / &gt; / &amp;
    assert "<script" not in soft_breaks("x,<script>")


def test_finding_messages_render_code_spans_and_keep_hostile_names_as_text(tmp_path):
    from report_fixtures import HOSTILE_SCRIPT, profile

    from pmuprof.findings.diagnosis import Diagnosis
    from pmuprof.findings.model import Finding
    from pmuprof.report import write_outputs

    message = f"Spinning in `ut_delay` under `{HOSTILE_SCRIPT}` and one stray ` backtick."
    found = Finding(
        "innodb-spin-wait",
        "critical",
        "Spinning",
        0.5,
        message=message,
        chain=("ut_delay", "mutex_enter"),
        process="mariadbd",
    )
    text = write_outputs(profile(), Diagnosis.of([found]), tmp_path)["html"].read_text(encoding="utf-8")
    card = text[text.index('id="finding-innodb-spin-wait"') :]
    card = card[: card.index("</article>")]
    assert "<code>ut_delay</code>" in card
    assert "<code>&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;</code>" in card
    assert "one stray ` backtick" in card and "<img" not in text
