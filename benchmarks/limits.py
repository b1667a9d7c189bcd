"""The local servers' limits under load, side by side with the unbounded stdlib server they
replaced (issue 19.5). Everything runs on 127.0.0.1 in this process, bounded in time.

1. slowloris: `--slow` connections (default 300) send a partial request and drip a byte now and
   then; meanwhile a punctual client asks for `system.listMethods`. Printed per server: peak
   threads, seconds until the punctual client was answered, slow connections still open at the
   end. Baseline: `ThreadingHTTPServer` (one thread per connection, no deadline) serving the
   same handler; ours: `RpcHttpServer` (16 workers, `--deadline` s per request).
2. batch: a `--batch`-call JSON-RPC batch (default 2,000) through the dispatcher: seconds and
   peak Python memory with the cap (one error) and without it (jsonrpcserver running it all).
3. backlog: `--clients` (default 200) connections opened at once, then each sends a request:
   answered count and seconds, with a listen backlog of 5 (the stdlib default) and ours (256).

Run: `.venv/bin/python benchmarks/limits.py [--slow N] [--seconds S] [--batch N] [--clients N]`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import threading
import time
import tracemalloc
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from typing import Any

from tracetool_daemon import registry
from tracetool_daemon.server import RpcHttpServer, _Handler

LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "system.listMethods"}).encode()


def _request(port: int, timeout: float) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: "
            + str(len(LIST)).encode()
            + b"\r\n\r\n"
            + LIST
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


class _Plain(ThreadingHTTPServer):
    """The stdlib server the daemon used before: a thread per connection, no deadline."""

    daemon_threads = True

    def __init__(self, backlog: int = 5) -> None:
        self.request_queue_size = backlog
        self.handle_body = lambda body: registry.dispatch(None, body)
        self.max_body = 8 << 20
        self.allowed_hosts = ()
        self.request_timeout = 1e9
        self.write_timeout = 1e9
        super().__init__(("127.0.0.1", 0), _Handler)

    def accepted_at(self) -> float:
        return time.monotonic()

    @property
    def port(self) -> int:
        return int(self.server_address[1])


def _serve(server: Any) -> Callable[[], None]:
    run = server.serve if hasattr(server, "serve") else server.serve_forever
    thread = threading.Thread(target=run, daemon=True)
    thread.start()

    def stop() -> None:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()

    return stop


def slowloris(server: Any, slow: int, seconds: float) -> tuple[int, float, int]:
    stop = _serve(server)
    before = threading.active_count()
    socks: list[socket.socket] = []
    peak = 0
    try:
        for _ in range(slow):
            sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
            sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            socks.append(sock)
        answered: list[float] = []
        started = time.monotonic()

        def punctual() -> None:
            with contextlib.suppress(OSError):
                if _request(server.port, seconds + 5).startswith(b"HTTP/1.1 200"):
                    answered.append(time.monotonic() - started)

        client = threading.Thread(target=punctual, daemon=True)
        client.start()
        while time.monotonic() - started < seconds:
            for sock in socks[::10]:
                with contextlib.suppress(OSError):
                    sock.send(b"X")
            peak = max(peak, threading.active_count() - before)
            time.sleep(0.1)
        client.join(timeout=5)
        still_open = 0
        for sock in socks:
            sock.setblocking(False)
            try:
                if sock.recv(1) != b"":
                    still_open += 1
            except BlockingIOError:
                still_open += 1
            except OSError:
                pass
        return peak, answered[0] if answered else float("nan"), still_open
    finally:
        for sock in socks:
            sock.close()
        stop()


def batch(size: int, capped: bool) -> tuple[float, float]:
    body = json.dumps(
        [{"jsonrpc": "2.0", "id": i, "method": "system.listMethods"} for i in range(size)]
    )
    saved = registry.MAX_BATCH
    registry.MAX_BATCH = saved if capped else size + 1
    tracemalloc.start()
    try:
        started = time.perf_counter()
        registry.dispatch(None, body)
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
        registry.MAX_BATCH = saved
    return elapsed, peak


def backlog(server: Any, clients: int) -> tuple[int, float]:
    stop = _serve(server)
    try:
        started = time.monotonic()
        socks = []
        for _ in range(clients):
            with contextlib.suppress(OSError):
                socks.append(socket.create_connection(("127.0.0.1", server.port), timeout=10))
        ok: list[int] = []

        def ask(sock: socket.socket) -> None:
            with sock, contextlib.suppress(OSError):
                sock.sendall(
                    b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                    b"Content-Length: " + str(len(LIST)).encode() + b"\r\n\r\n" + LIST
                )
                if sock.recv(12) == b"HTTP/1.1 200":
                    ok.append(1)

        threads = [threading.Thread(target=ask, args=(s,)) for s in socks]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        return len(ok), time.monotonic() - started
    finally:
        stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slow", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--deadline", type=float, default=1.0)
    parser.add_argument("--batch", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=200)
    args = parser.parse_args()
    registry.prepare()

    print(f"slowloris: {args.slow} slow connections for {args.seconds:.0f} s")
    print(f"  {'server':<28}{'peak threads':>14}{'punctual answer s':>20}{'slow still open':>17}")
    for name, server in (
        ("stdlib ThreadingHTTPServer", _Plain()),
        (
            "RpcHttpServer (bounded)",
            RpcHttpServer(
                lambda body: registry.dispatch(None, body),
                allowed_hosts=(),
                request_timeout=args.deadline,
            ),
        ),
    ):
        peak, answer, still = slowloris(server, args.slow, args.seconds)
        print(f"  {name:<28}{peak:>14}{answer:>20.2f}{still:>17}")

    print(f"batch of {args.batch} calls")
    print(f"  {'dispatcher':<28}{'seconds':>14}{'peak MiB':>20}")
    for name, capped in (("uncapped", False), (f"capped at {registry.MAX_BATCH}", True)):
        elapsed, peak_mb = batch(args.batch, capped)
        print(f"  {name:<28}{elapsed:>14.3f}{peak_mb:>20.1f}")

    print(f"backlog: {args.clients} connections at once")
    print(f"  {'listen backlog':<28}{'answered':>14}{'seconds':>20}")
    for name, server in (
        ("5 (stdlib default)", _Plain(backlog=5)),
        ("256 (ours)", RpcHttpServer(lambda body: registry.dispatch(None, body), allowed_hosts=())),
    ):
        answered, elapsed = backlog(server, args.clients)
        print(f"  {name:<28}{answered:>14}{elapsed:>20.2f}")


if __name__ == "__main__":
    main()
