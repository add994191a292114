"""Rebuild a report and take a PNG of its per-second strip after dragging over the seconds where the
top finding was busiest, with the flame graph redrawn for them (headless Chromium, 1400×900).

    python3 examples/seconds_strip.py [RUN_DIR] [OUT.png]   (default: examples/demo-output/spike → examples/seconds-strip.png)

Uses the browser tests' DevTools driver (tests/browser/cdp.py, stdlib only) and needs Chromium.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "browser"))

from cdp import Browser, chromium  # noqa: E402

STRIP = (
    "(() => { const c = document.querySelector('#sec-strip canvas'); c.scrollIntoView({block: 'start'});"
    " window.scrollBy(0, -150); const r = c.getBoundingClientRect(); return [r.left, r.width, r.top + r.height / 2]; })()"
)
# the first and last second where the top finding holds at least a third of the samples
HOT = (
    "(() => { const d = window.pmuSeconds.d, hot = []; d.n.forEach((n, s) => { if (d.top && d.top[s] * 3 >= n && n) hot.push(s); });"
    " return hot.length ? [hot[0], hot[hot.length - 1], d.n.length] : [0, d.n.length - 1, d.n.length]; })()"
)


def drag_busiest(browser: Browser) -> None:
    first, last, n = browser.js(HOT)
    left, width, y = browser.js(STRIP)
    x0, x1 = (left + (s + 0.5) / n * width for s in (first, last))
    browser.mouse("mouseMoved", x0, y)
    browser.mouse("mousePressed", x0, y, "left", 1)
    browser.mouse("mouseMoved", x1, y, "left")
    browser.mouse("mouseReleased", x1, y, "left", 1)
    browser.wait(f"document.getElementById('sec-strip').getAttribute('data-range') === '{first + 1}-{last + 1}'")


def main() -> int:
    run_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "examples" / "demo-output" / "spike"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else REPO / "examples" / "seconds-strip.png"
    exe = chromium()
    if not exe:
        print("no Chromium here (apt-get install chromium)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="pmuprof-shot-") as tmp:
        shown = os.path.relpath(run_dir.resolve(), REPO)
        subprocess.run([sys.executable, "-m", "pmuprof", "report", shown, "-o", tmp], cwd=REPO, check=True)
        browser = Browser(exe)
        try:
            browser.call(
                "Emulation.setDeviceMetricsOverride", width=1400, height=900, deviceScaleFactor=1, mobile=False
            )
            browser.open((Path(tmp) / "report.html").as_uri())
            browser.wait("!!window.pmuSeconds")
            drag_busiest(browser)
            browser.js(STRIP)
            out.write_bytes(base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"]))
        finally:
            browser.close()
    print(f"{out}: {out.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
