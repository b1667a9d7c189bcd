"""The UI server under load (issue 19.5), real sockets on 127.0.0.1: 200 clients connecting at
the same moment are all answered (listen backlog 256, bounded worker pool), and clients that
vanish mid-request leave no traceback."""

from __future__ import annotations

import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tracetool_daemon.ui import UiServer

from tests.query_mcp.shop_index import ShopIndex

pytestmark = pytest.mark.e2e
CLIENTS = 200


@pytest.fixture
def ui(shop: ShopIndex, tmp_path: Path) -> Iterator[UiServer]:
    copy = tmp_path / "copy.db"
    shutil.copy(shop.query_db, copy)
    server = UiServer(query_db=str(copy))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.close()
    thread.join(timeout=10)


def test_200_simultaneous_connections_are_all_answered(ui: UiServer) -> None:
    # Connect all first (the server has not accepted them yet: they sit in the backlog), then
    # send, so every one of them needs a backlog slot at once.
    socks = [socket.create_connection(("127.0.0.1", ui.port), timeout=30) for _ in range(CLIENTS)]
    statuses: list[bytes] = []
    lock = threading.Lock()

    def ask(sock: socket.socket) -> None:
        with sock:
            sock.sendall(
                b"GET /favicon.svg HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            )
            data = b""
            while chunk := sock.recv(65536):
                data += chunk
        with lock:
            statuses.append(data[:12])

    threads = [threading.Thread(target=ask, args=(s,)) for s in socks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert statuses.count(b"HTTP/1.1 200") == CLIENTS


def test_vanished_clients_leave_no_traceback(
    ui: UiServer, capfd: pytest.CaptureFixture[str]
) -> None:
    for _ in range(20):
        sock = socket.create_connection(("127.0.0.1", ui.port))
        sock.sendall(b"GET /api/summary HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()
    with socket.create_connection(("127.0.0.1", ui.port), timeout=10) as sock:
        sock.sendall(b"GET /app.css HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert sock.recv(12) == b"HTTP/1.1 200"
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
