"""The one Host/Origin check (`tracetool.hostcheck`) the agent, the daemon and the UI share."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracetool.config import load_config
from tracetool.errors import ConfigError
from tracetool.hostcheck import allowed_hosts, host_name, origin_name, refusal


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        (None, True),  # HTTP/1.0
        ("127.0.0.1", True),
        ("127.0.0.1:8080", True),
        ("127.1.2.3:80", True),
        ("localhost:1", True),
        ("LOCALHOST", True),
        ("app.localhost:8000", True),
        ("[::1]:9", True),
        ("evil.example", False),
        ("evil.example:80", False),
        ("127.0.0.1.evil.example:80", False),
        ("10.0.0.1", False),
        ("", False),
        ("127.0.0.1:8000@evil.example", False),
        ("user@127.0.0.1", False),
        ("127.0.0.1:80/x", False),
        ("127.0.0.1:99999", False),
        ("127.0.0.1, evil.example", False),  # two Host headers joined by the server
        ("[::1", False),
    ],
)
def test_host(host: str | None, ok: bool) -> None:
    assert (refusal([] if host is None else [host], []) is None) is ok


@pytest.mark.parametrize(
    ("origin", "ok"),
    [
        (None, True),
        ("http://127.0.0.1:5000", True),
        ("http://localhost", True),
        ("https://[::1]:3", True),
        ("null", False),
        ("http://evil.example", False),
        ("file://", False),
        ("http://127.0.0.1.evil.example", False),
        ("http://127.0.0.1:80@evil.example", False),
        ("http://localhost/path", False),
        ("ftp://localhost", False),
        ("http://localhost, http://evil.example", False),
    ],
)
def test_origin(origin: str | None, ok: bool) -> None:
    assert (refusal([], [] if origin is None else [origin]) is None) is ok


def test_repeated_headers_are_refused_even_when_each_is_local() -> None:
    assert refusal(["127.0.0.1", "127.0.0.1"], []) == "more than one Host header"
    assert refusal(["127.0.0.1"], ["http://localhost", "http://localhost"]) == (
        "more than one Origin header"
    )


def test_allowed_names_exact_domain_and_star() -> None:
    allowed = ("myapp.test", ".corp.example")
    assert refusal(["myapp.test:8000"], ["http://myapp.test:8000"], allowed) is None
    assert refusal(["api.corp.example"], [], allowed) is None
    assert refusal(["corp.example"], [], allowed) is None
    assert refusal(["notcorp.example"], [], allowed) is not None
    assert refusal(["myapp.test.evil.example"], [], allowed) is not None
    assert refusal(["anything.example"], ["https://x.example"], ("*",)) is None
    # a malformed Host stays refused whatever is allowed
    assert refusal(["127.0.0.1:1@x"], [], ("*",)) is not None


def test_names() -> None:
    assert host_name("LocalHost.:80") == "localhost"
    assert host_name("[::1]:80") == "[::1]"
    assert origin_name("https://Example.test:8443") == "example.test"
    assert origin_name("https://example.test:8443/") is None


def test_allowed_hosts_from_env_and_trace_yml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "trace.yml").write_text("allowed_hosts: [myapp.test, .corp.example]\n")
    monkeypatch.setenv("TRACETOOL_ALLOWED_HOSTS", " dev.box , ,other.test")
    config = load_config(tmp_path / "trace.yml")
    assert allowed_hosts(config.allowed_hosts) == (
        "dev.box",
        "other.test",
        "myapp.test",
        ".corp.example",
    )
    (tmp_path / "trace.yml").write_text("allowed_hosts: {a: 1}\n")
    with pytest.raises(ConfigError, match="allowed_hosts must be a list of strings"):
        load_config(tmp_path / "trace.yml")
