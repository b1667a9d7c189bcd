"""The bounded HTTP server both local servers (JSON-RPC, query UI) are built on.

Contract:

- `BoundedHTTPServer` binds an address like `ThreadingHTTPServer` but serves connections with
  at most `max_workers` threads (default 16). A connection accepted while every worker is busy
  waits in a queue of `max_queue` connections (default 256). A free worker takes the oldest
  queued connection whose request headers have fully arrived (a non-consuming peek), else the
  oldest. When the queue is full, the oldest queued connection that has not sent its headers
  is closed to make room (a slow client), else the new one is.
  The listen backlog is `request_queue_size` = 256, so 200 clients connecting at the same moment
  are all accepted.
- `GuardedHandler` (a `BaseHTTPRequestHandler`) gives every request a deadline:
  `request_timeout` seconds (default 10) until its headers and body are read, counted from the
  connection's accept (time queued for a worker counts) for the first request and from the end
  of the previous one on a keep-alive connection. A client that is idle, or that sends a byte at
  a time (slowloris), is disconnected when the deadline passes; bytes that arrived in time are
  still read, so a queued punctual client is served. A worker is never held longer than that
  by a silent client. Writes time out after `write_timeout` seconds (default 30).
- A client that disconnects (reset, broken pipe, timeout) is logged at debug level: no traceback
  on stderr. Any other exception in a handler is logged once with its traceback.
- `GuardedHandler.refused()` runs `tracetool.hostcheck.refusal` over every `Host` and `Origin`
  header with the server's `allowed_hosts` (loopback always allowed) and answers 403 with a
  one-line JSON `{"error": ...}` (connection closed) when the request comes from another site.
"""

from __future__ import annotations

import collections
import io
import json
import logging
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tracetool.hostcheck import refusal

log = logging.getLogger("tracetool.daemon.http")

DEFAULT_MAX_WORKERS = 16
DEFAULT_MAX_QUEUE = 256
DEFAULT_REQUEST_TIMEOUT = 10.0
DEFAULT_WRITE_TIMEOUT = 30.0
BACKLOG = 256


def _has_request(sock: socket.socket) -> bool:
    """Whether a queued connection's headers have arrived (or it was closed): a peek, nothing
    is consumed."""
    try:
        data = sock.recv(16384, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return False
    except OSError:
        return True  # broken: serving it is instant
    return not data or b"\r\n\r\n" in data


class _DeadlineReader(io.RawIOBase):
    """Socket reads that fail with TimeoutError once `deadline` (monotonic) has passed."""

    def __init__(self, sock: socket.socket, write_timeout: float) -> None:
        self._sock = sock
        self._write_timeout = write_timeout
        self.deadline = time.monotonic()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        # Past the deadline, only bytes that already arrived are taken (a queued connection
        # whose client was on time is still served); then the read times out.
        self._sock.settimeout(max(0.0, self.deadline - time.monotonic()))
        try:
            return self._sock.recv_into(buffer)
        except BlockingIOError:
            raise TimeoutError("request not received in time") from None
        finally:
            # Answers are written with their own, longer timeout.
            self._sock.settimeout(self._write_timeout)


class GuardedHandler(BaseHTTPRequestHandler):
    """Deadline per request and the shared Host/Origin check (module doc)."""

    protocol_version = "HTTP/1.1"
    server: BoundedHTTPServer
    _reader: _DeadlineReader

    def setup(self) -> None:
        super().setup()
        self._reader = _DeadlineReader(self.connection, self.server.write_timeout)
        self.rfile = io.BufferedReader(self._reader)
        self._first = True

    def handle_one_request(self) -> None:
        # The first request's clock starts when the connection was accepted (time spent
        # queued for a worker counts), later keep-alive requests' when the previous one ended.
        start = self.server.accepted_at() if self._first else time.monotonic()
        self._first = False
        self._reader.deadline = start + self.server.request_timeout
        super().handle_one_request()

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def refusal_headers(self) -> list[tuple[str, str]]:
        """Extra headers of a 403 answer (the UI adds its security headers)."""
        return []

    def refused(self) -> bool:
        """Answer 403 and return True when the request comes from another site."""
        why = refusal(
            self.headers.get_all("Host") or [],
            self.headers.get_all("Origin") or [],
            self.server.allowed_hosts,
        )
        if why is None:
            return False
        self.close_connection = True
        body = (json.dumps({"error": why}) + "\n").encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for key, value in self.refusal_headers():
            self.send_header(key, value)
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        return True


class BoundedHTTPServer(ThreadingHTTPServer):
    """A fixed pool of worker threads and a bounded queue of connections (module doc)."""

    daemon_threads = True
    allow_reuse_address = False
    request_queue_size = BACKLOG

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[GuardedHandler],
        *,
        allowed_hosts: tuple[str, ...] = (),
        max_workers: int = DEFAULT_MAX_WORKERS,
        max_queue: int = DEFAULT_MAX_QUEUE,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
    ) -> None:
        self.allowed_hosts = allowed_hosts
        self.max_workers = max(1, max_workers)
        self.max_queue = max(0, max_queue)
        self.request_timeout = request_timeout
        self.write_timeout = write_timeout
        self._lock = threading.Lock()
        self._waiting: collections.deque[tuple[Any, Any, float]] = collections.deque()
        self._local = threading.local()
        self._busy = 0
        self.refused_connections = 0
        super().__init__(address, handler)

    @property
    def busy_workers(self) -> int:
        return self._busy

    def accepted_at(self) -> float:
        """When the connection the current worker serves was accepted (monotonic)."""
        return float(getattr(self._local, "accepted", time.monotonic()))

    def process_request(self, request: Any, client_address: Any) -> None:
        now = time.monotonic()
        dropped = None
        with self._lock:
            if self._busy >= self.max_workers:
                if len(self._waiting) >= self.max_queue:
                    # Full: make room by dropping the oldest queued connection that has not
                    # even sent its headers (a slow client), else refuse the new one.
                    stalled = next(
                        (i for i, item in enumerate(self._waiting) if not _has_request(item[0])),
                        None,
                    )
                    if stalled is None or not self.max_queue:
                        dropped = request
                    else:
                        dropped = self._waiting[stalled][0]
                        del self._waiting[stalled]
                    self.refused_connections += 1
                if dropped is not request:
                    self._waiting.append((request, client_address, now))
                start = False
            else:
                self._busy += 1
                start = True
        if dropped is not None:
            log.warning("too many connections: closed one from %s", client_address[0])
            self.shutdown_request(dropped)
        if not start:
            return
        worker = threading.Thread(
            target=self._work,
            args=(request, client_address, now),
            name="tracetool-http",
            daemon=True,
        )
        try:
            worker.start()
        except RuntimeError:  # cannot start a thread: give the slot back, drop the connection
            with self._lock:
                self._busy -= 1
            self.shutdown_request(request)

    def _next(self) -> tuple[Any, Any, float] | None:
        """The queued connection to serve next: the oldest whose request has fully arrived,
        else the oldest (called with the lock held)."""
        if not self._waiting:
            return None
        for i, item in enumerate(self._waiting):
            if _has_request(item[0]):
                del self._waiting[i]
                return item
        return self._waiting.popleft()

    def _work(self, request: Any, client_address: Any, accepted: float) -> None:
        item: tuple[Any, Any, float] | None = (request, client_address, accepted)
        while item is not None:
            self._local.accepted = item[2]
            self.process_request_thread(item[0], item[1])
            with self._lock:
                item = self._next()
                if item is None:
                    self._busy -= 1

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, socket.timeout)):
            log.debug("client %s went away: %s", client_address[0], exc)
            return
        log.error("error serving %s", client_address[0], exc_info=exc)

    def server_close(self) -> None:
        super().server_close()
        with self._lock:
            waiting, self._waiting = list(self._waiting), collections.deque()
        for request, _, _ in waiting:
            self.shutdown_request(request)


__all__ = ["BoundedHTTPServer", "GuardedHandler"]
