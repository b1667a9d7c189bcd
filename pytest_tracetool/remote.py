"""Client for an app's remote-recording endpoints (spec "HTTP endpoints"): ``/_trace/record``.

``start()`` = ``POST`` (200 started, 409 someone else records), ``stop()`` = ``DELETE`` (200 with the
trace document, 404 no session). Nothing here raises: every call returns a result that either
carries what was asked for or a `Problem` naming what went wrong, so that recording trouble can
never change a test's outcome. stdlib ``urllib`` only, short timeouts, proxies bypassed for
loopback addresses (a developer's ``http_proxy`` must not swallow requests to 127.0.0.1).
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

RECORD_PATH = "/_trace/record"
START_TIMEOUT = 2.0
# Stopping makes the app serialize the whole recording: allow more than for starting.
STOP_TIMEOUT = 15.0
_LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]"}


@dataclass(frozen=True)
class Problem:
    """One kind of recording trouble. `kind` groups repeats for a once-only report."""

    kind: str  # "busy" (409) | "no-session" (404) | "unreachable" | "timeout" | "bad-response"
    message: str


@dataclass(frozen=True)
class StartResult:
    started: bool
    problem: Problem | None = None


@dataclass(frozen=True)
class StopResult:
    document: dict[str, Any] | None
    problem: Problem | None = None


class RemoteRecording:
    """Drives ``{base_url}/_trace/record`` of one running app."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + RECORD_PATH
        host = urllib.parse.urlsplit(self.base_url).hostname or ""
        handlers: list[urllib.request.BaseHandler] = []
        if host in _LOOPBACK or host.startswith("127."):
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)

    def _request(self, method: str, timeout: float) -> tuple[int, bytes]:
        request = urllib.request.Request(
            self.url, method=method, headers={"Accept": "application/json"}
        )
        try:
            with self._opener.open(request, timeout=timeout) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, exc.read()

    def _failure(self, method: str, exc: BaseException) -> Problem:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, (socket.timeout, TimeoutError)):
            return Problem("timeout", f"{method} {self.url} timed out: the app did not answer")
        return Problem(
            "unreachable", f"{method} {self.url} failed: cannot connect to the app ({reason})"
        )

    def start(self) -> StartResult:
        """``POST /_trace/record``: start a session in the app."""
        try:
            status, _ = self._request("POST", START_TIMEOUT)
        except (OSError, ValueError) as exc:
            return StartResult(False, self._failure("POST", exc))
        if status == 200:
            return StartResult(True)
        if status == 409:
            return StartResult(
                False,
                Problem(
                    "busy",
                    f"POST {self.url} answered 409: a recording session was already in "
                    "progress (someone else is recording); affected tests were not recorded",
                ),
            )
        return StartResult(
            False, Problem("bad-response", f"POST {self.url} answered {status}, expected 200")
        )

    def stop(self) -> StopResult:
        """``DELETE /_trace/record``: stop the session and return its trace document."""
        try:
            status, body = self._request("DELETE", STOP_TIMEOUT)
        except (OSError, ValueError) as exc:
            return StopResult(None, self._failure("DELETE", exc))
        if status == 404:
            return StopResult(
                None,
                Problem(
                    "no-session",
                    f"DELETE {self.url} answered 404: no recording session to stop (the app "
                    "restarted, or someone else stopped it); affected tests were not recorded",
                ),
            )
        if status != 200:
            return StopResult(
                None, Problem("bad-response", f"DELETE {self.url} answered {status}, expected 200")
            )
        try:
            document = json.loads(body)
        except ValueError:
            document = None
        if not isinstance(document, dict) or not isinstance(document.get("events", []), list):
            return StopResult(
                None,
                Problem("bad-response", f"DELETE {self.url} did not return a trace document"),
            )
        return StopResult(document)
