"""A small W3C WebDriver client for headless Chromium through Debian's chromedriver (no selenium).

`Browser.start(tmp)` runs chromedriver on a free 127.0.0.1 port and opens a headless Chromium
session; `get`, `find`, `find_all`, `click`, `text`, `run` (execute a script), `wait`,
`frame`/`top` (switch into an iframe and back), `screenshot` and `quit` are the calls the editor
tests and scripts/screenshots need.
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.realparts.chromium import FLAGS as CHROMIUM_FLAGS
from tests.realparts.chromium import find_chromium

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
FLAGS = [
    "--headless=new",
    *(flag for flag in CHROMIUM_FLAGS if flag != "--headless"),
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
]


class WebDriverError(AssertionError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def chromedriver() -> str | None:
    return shutil.which("chromedriver")


def chromium_binary() -> str | None:
    return find_chromium()


class Browser:
    def __init__(self, proc: subprocess.Popen[bytes], port: int, session: str) -> None:
        self.proc = proc
        self.port = port
        self.session = session

    @classmethod
    def start(cls, tmp: Path, size: tuple[int, int] = (1400, 900)) -> Browser:
        driver, binary = chromedriver(), chromium_binary()
        if driver is None or binary is None:
            raise WebDriverError("chromium and chromedriver are needed")
        port = free_port()
        proc = subprocess.Popen(
            [driver, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                _call(port, "GET", "/status")
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    proc.kill()
                    raise WebDriverError("chromedriver did not start") from None
                time.sleep(0.05)
        caps = {
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "binary": binary,
                        "args": [
                            *FLAGS,
                            f"--window-size={size[0]},{size[1]}",
                            f"--user-data-dir={tmp / 'chromium-profile'}",
                        ],
                    },
                }
            }
        }
        try:
            value = _call(port, "POST", "/session", caps)
        except Exception:
            proc.kill()
            raise
        return cls(proc, port, value["sessionId"])

    def _do(self, method: str, path: str, body: Any = None) -> Any:
        return _call(self.port, method, f"/session/{self.session}{path}", body)

    def get(self, url: str) -> None:
        self._do("POST", "/url", {"url": url})

    def find_all(self, css: str) -> list[str]:
        found = self._do("POST", "/elements", {"using": "css selector", "value": css})
        return [e[ELEMENT] for e in found]

    def find(self, css: str, timeout: float = 20.0) -> str:
        found = self.wait(lambda: self.find_all(css), timeout, f"no element {css!r}")
        return str(found[0])

    def click(self, element: str) -> None:
        self._do("POST", f"/element/{element}/click", {})

    def text(self, element: str) -> str:
        return str(self._do("GET", f"/element/{element}/text"))

    def send_keys(self, element: str, text: str) -> None:
        self._do("POST", f"/element/{element}/value", {"text": text})

    def run(self, script: str, *args: Any) -> Any:
        return self._do("POST", "/execute/sync", {"script": script, "args": list(args)})

    def frame(self, element: str) -> None:
        self._do("POST", "/frame", {"id": {ELEMENT: element}})

    def top(self) -> None:
        self._do("POST", "/frame", {"id": None})

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self._do("GET", "/screenshot")))

    def wait(
        self, condition: Callable[[], Any], timeout: float = 20.0, what: str = "condition"
    ) -> Any:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            try:
                last = condition()
            except WebDriverError as exc:
                last = exc
                if "no such" not in str(exc) and "stale" not in str(exc):
                    raise
            else:
                if last:
                    return last
            time.sleep(0.1)
        raise WebDriverError(f"{what} within {timeout} s (last: {last!r})")

    def quit(self) -> None:
        try:
            self._do("DELETE", "")
        except Exception:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _call(port: int, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=data,
        method=method,
        headers={"Content-Type": "application/json"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=60) as response:
            answer = json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        detail = json.loads(exc.read() or b"{}").get("value", {})
        raise WebDriverError(f"{detail.get('error')}: {detail.get('message', '')[:300]}") from None
    return answer.get("value")
