"""Rebuild a report and take a PNG of its first screen (1400×900) with headless Chromium.

    python3 examples/first_screen.py [RUN_DIR] [OUT.png] [#VIEW]      (default: examples/demo-output/mixed → examples/first-screen.png)

#VIEW opens the flame graph in that state and scrolls to it, e.g. '#view=sandwich&focus=ut_delay'.

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


def main() -> int:
    run_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "examples" / "demo-output" / "mixed"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else REPO / "examples" / "first-screen.png"
    view = sys.argv[3] if len(sys.argv) > 3 else ""
    exe = chromium()
    if not exe:
        print("no Chromium here (apt-get install chromium)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="pmuprof-shot-") as tmp:
        shown = os.path.relpath(run_dir.resolve(), REPO)  # the report names its input: keep it short
        subprocess.run([sys.executable, "-m", "pmuprof", "report", shown, "-o", tmp], cwd=REPO, check=True)
        browser = Browser(exe)
        try:
            browser.call(
                "Emulation.setDeviceMetricsOverride", width=1400, height=900, deviceScaleFactor=1, mobile=False
            )
            browser.open((Path(tmp) / "report.html").as_uri() + view)
            browser.wait("!!window.pmuFlame")
            if view:
                browser.js("document.getElementById('flamegraph').scrollIntoView()")
            out.write_bytes(base64.b64decode(browser.call("Page.captureScreenshot", format="png")["data"]))
        finally:
            browser.close()
    print(f"{out}: {out.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
