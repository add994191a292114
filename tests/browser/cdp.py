"""Drive headless Chromium over the DevTools protocol on a pipe (stdlib only): real input events, no driver."""

from __future__ import annotations

import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
    "--window-size=1280,900",
)
TIMEOUT = 30.0  # per wait: generous for a loaded 2-core CI machine; passing waits return at once


def chromium() -> str | None:
    """The Chromium executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _above_four(fd: int) -> int:
    """The same pipe end on a descriptor that moving the pipe to fds 3 and 4 cannot clobber."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


class CdpError(RuntimeError):
    """A protocol error, a script exception in the page, or a wait that ran out of time."""


class Browser:
    """One Chromium process with one page; commands go to fd 3 and answers come back on fd 4, NUL-separated."""

    def __init__(self, exe: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="pmuprof-chromium-")
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()
        cmd_r, out_w = _above_four(cmd_r), _above_four(out_w)

        def to_fds_3_and_4() -> None:  # in the child: where --remote-debugging-pipe expects the pipe
            os.dup2(cmd_r, 3)
            os.dup2(out_w, 4)
            os.close(cmd_r)
            os.close(out_w)

        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            preexec_fn=to_fds_3_and_4,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(cmd_r)
        os.close(out_w)
        self._next = 0
        self._answers: dict[int, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.session = ""
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True, session=False)[
            "sessionId"
        ]
        for domain in ("Page", "Runtime", "Log"):
            self.call(domain + ".enable")
        self.call("Emulation.setDeviceMetricsOverride", width=1200, height=900, deviceScaleFactor=1, mobile=False)

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._out_r, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._answers[-1] = {"error": {"message": "Chromium closed the pipe"}}
                    self._cond.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                if "id" in msg:
                    with self._cond:
                        self._answers[msg["id"]] = msg
                        self._cond.notify_all()
                else:
                    self.events.put(msg)

    def call(self, method: str, session: bool = True, **params: Any) -> dict[str, Any]:
        """Send one command (to the page unless session=False) and wait for its answer."""
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        with self._cond:
            while self._next not in self._answers and -1 not in self._answers:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise CdpError(f"{method}: no answer in {TIMEOUT:.0f} s")
                self._cond.wait(left)
            answer = self._answers.pop(self._next, None) or self._answers[-1]
        if "error" in answer:
            raise CdpError(f"{method}: {answer['error'].get('message')}")
        return answer.get("result", {})

    def js(self, expression: str) -> Any:
        """Evaluate in the page (promises awaited) and return the value; a thrown exception fails."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise CdpError(
                f"{expression!r} threw: {details.get('exception', {}).get('description') or details.get('text')}"
            )
        return result["result"].get("value")

    def wait(self, expression: str, timeout: float = TIMEOUT) -> Any:
        """Poll until the expression is truthy; its value, or CdpError with the last value seen."""
        deadline = time.monotonic() + timeout
        value: Any = None
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.02)
        raise CdpError(f"timed out waiting for {expression!r} (last value {value!r})")

    def open(self, url: str) -> None:
        """Load a page and wait until its scripts have started."""
        self.call("Page.navigate", url=url)
        self.wait("document.readyState === 'complete' && location.href === " + json.dumps(url))

    def mouse(self, kind: str, x: float, y: float, button: str = "none", clicks: int = 0) -> None:
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button=button, clickCount=clicks)

    def click(self, x: float, y: float, button: str = "left", clicks: int = 1) -> None:
        """A real click (move, press, release); clicks=2 sends the second press of a double-click too."""
        self.mouse("mouseMoved", x, y)
        for n in range(1, clicks + 1):
            self.mouse("mousePressed", x, y, button, n)
            self.mouse("mouseReleased", x, y, button, n)

    def click_selector(self, selector: str) -> None:
        """Scroll an element into view and click its centre."""
        rect = self.js(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView({{block: 'center'}});"
            " const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()"
        )
        self.click(*rect)

    def type_text(self, text: str) -> None:
        self.call("Input.insertText", text=text)

    def key(self, key: str, code: str, vk: int) -> None:
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", type=kind, key=key, code=code, windowsVirtualKeyCode=vk)

    def history(self, step: int) -> None:
        """Go back (-1) or forward (+1) in the page's history, as the browser's buttons do."""
        nav = self.call("Page.getNavigationHistory")
        entry = nav["entries"][nav["currentIndex"] + step]
        self.call("Page.navigateToHistoryEntry", entryId=entry["id"])

    def problems(self) -> list[str]:
        """Script exceptions, console errors and CSP reports seen since the last call."""
        out = []
        while not self.events.empty():
            ev = self.events.get()
            method, params = ev.get("method"), ev.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(str(params.get("exceptionDetails", {}).get("exception", {}).get("description")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                out.append(json.dumps(params.get("args")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(params["entry"].get("text", ""))
        return out

    def close(self) -> None:
        try:
            self.call("Browser.close", session=False)
        except CdpError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        shutil.rmtree(self.profile, ignore_errors=True)
