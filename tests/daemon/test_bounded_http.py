"""The local HTTP servers stay bounded (issue 19.5), on real sockets on 127.0.0.1: slow or idle
clients (slowloris) are disconnected at the request deadline and never hold more than the
worker pool's threads; a client that disconnects leaves no traceback; a forged Host with
user-info is refused. The JSON-RPC server (`RpcHttpServer`) with small limits keeps each test
to a few seconds; the UI's backlog is in tests/query_ui/test_bounded.py."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from tracetool_daemon.registry import dispatch
from tracetool_daemon.server import RpcHttpServer

pytestmark = pytest.mark.e2e

WORKERS = 4
DEADLINE = 0.6


@pytest.fixture
def server() -> Iterator[RpcHttpServer]:
    srv = RpcHttpServer(
        lambda body: dispatch(None, body),
        allowed_hosts=(),
        max_workers=WORKERS,
        max_queue=512,
        request_timeout=DEADLINE,
        write_timeout=2.0,
    )
    thread = threading.Thread(target=srv.serve, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    thread.join(timeout=10)
    srv.server_close()


def post(port: int, body: bytes, extra: bytes = b"") -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\n"
            + extra
            + b"Content-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "system.listMethods"}).encode()


def test_slowloris_holds_no_more_than_the_pool(server: RpcHttpServer) -> None:
    before = threading.active_count()
    slow: list[socket.socket] = []
    try:
        for _ in range(120):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the rest
            slow.append(sock)
        peak = 0
        started = time.monotonic()
        answer = b""
        # A well-behaved client still gets its answer (after the slow ones time out).
        result: list[bytes] = []
        client = threading.Thread(target=lambda: result.append(post(server.port, LIST)))
        client.start()
        while client.is_alive() and time.monotonic() - started < 30:
            for sock in slow[:20]:  # some of them keep dripping bytes
                with contextlib.suppress(OSError):
                    sock.send(b"X")
            peak = max(peak, threading.active_count() - before)
            time.sleep(0.05)
        client.join(timeout=1)
        answer = result[0] if result else b""
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
        assert peak <= WORKERS + 1, f"{peak} threads for 120 slow connections"
        # every slow connection was closed by the server at its deadline
        closed = 0
        for sock in slow:
            sock.settimeout(10)
            try:
                while sock.recv(4096):
                    pass
                closed += 1
            except ConnectionResetError:
                closed += 1
        assert closed == len(slow)
    finally:
        for sock in slow:
            sock.close()


def test_disconnecting_clients_leave_no_traceback(
    server: RpcHttpServer, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    port = server.port
    # body announced, half sent, gone
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n{")
    # request sent, connection reset before the answer is read
    for _ in range(20):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: "
            + str(len(LIST)).encode()
            + b"\r\n\r\n"
            + LIST
        )
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()
    # idle until the deadline
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(10)
        assert sock.recv(100) == b""  # closed by the server after DEADLINE
    assert post(port, LIST).startswith(b"HTTP/1.1 200 ")
    deadline = time.monotonic() + 5
    while server.busy_workers and time.monotonic() < deadline:
        time.sleep(0.02)
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


@pytest.mark.parametrize(
    "extra",
    [
        b"Host: 127.0.0.1:1@evil.example\r\n",
        b"Origin: http://evil.example\r\n",
        b"Host: 127.0.0.1\r\n",  # a second Host
        b"Origin: http://127.0.0.1\r\nOrigin: http://evil.example\r\n",
    ],
)
def test_forged_or_repeated_host_and_origin_are_refused(
    server: RpcHttpServer, extra: bytes
) -> None:
    answer = post(server.port, LIST, extra)
    assert answer.startswith(b"HTTP/1.1 403 "), answer[:200]


def test_a_full_queue_drops_stalled_clients_not_punctual_ones() -> None:
    srv = RpcHttpServer(
        lambda body: dispatch(None, body),
        allowed_hosts=(),
        max_workers=2,
        max_queue=4,
        request_timeout=DEADLINE,
    )
    thread = threading.Thread(target=srv.serve, daemon=True)
    thread.start()
    slow: list[socket.socket] = []
    try:
        for _ in range(30):  # far more than 2 workers + 4 queued
            sock = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
            sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            slow.append(sock)
        started = time.monotonic()
        answer = post(srv.port, LIST)
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:100]
        assert time.monotonic() - started < DEADLINE + 3
        assert srv.refused_connections >= 24
    finally:
        for sock in slow:
            sock.close()
        srv.shutdown()
        thread.join(timeout=10)
        srv.server_close()
