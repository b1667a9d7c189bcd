"""trace.yml parsing, validation and trace_dir precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracetool.config import PackageSpec, load_config, resolve_trace_dir
from tracetool.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "trace.yml"
    path.write_text(text)
    return path


def test_full_config(tmp_path: Path) -> None:
    cfg = load_config(
        write(
            tmp_path,
            """
name: shop
trace_dir: recordings
packages:
  - path: shop
    exclude: [shop.vendor, internal]
  - path: billing/core
    shallow: true
  - util
labels:
  security: [shop.auth.login]
  db: shop.models.save
custom_key: {kept: yes}
""",
        )
    )
    assert cfg.name == "shop"
    assert cfg.trace_dir == tmp_path.resolve() / "recordings"
    assert cfg.packages == (
        PackageSpec("shop", ("shop.vendor", "internal")),
        PackageSpec("billing.core", (), True),
        PackageSpec("util"),
    )
    assert cfg.labels == {"security": ("shop.auth.login",), "db": ("shop.models.save",)}
    assert cfg.raw["custom_key"] == {"kept": True}
    shop = cfg.packages[0]
    assert shop.covers("shop.models")
    assert not shop.covers("shop.vendor.x")
    assert not shop.covers("shop.internal")
    assert not shop.covers("shopping")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("trace_dir: 5", "trace_dir must be a path string"),
        ("packages: shop", "packages must be a list"),
        ("packages: [{exclude: [x]}]", "packages[0].path must be a module path string"),
        ("packages: [{path: a, shallow: maybe}]", "packages[0].shallow must be true or false"),
        ("packages: [{path: a, exclude: [1]}]", "packages[0].exclude must be a list of strings"),
        ("labels: [a]", "labels must be a mapping"),
        ("- a\n- b", "the top level must be a mapping"),
        ("name: [x]", "name must be a string"),
        ("a: [unclosed", "not valid YAML at line"),
        ("safe_repr: [1]", "safe_repr must be a list of strings"),
        ("safe_repr: [Money]", "safe_repr must be a list of dotted class names"),
    ],
)
def test_wrong_types_name_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    assert message in str(info.value)
    assert str(tmp_path / "trace.yml") in str(info.value)


def test_defaults_without_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TRACETOOL_CONFIG", raising=False)
    cfg = load_config()
    assert cfg.path is None
    assert cfg.trace_dir == tmp_path / "tmp/trace"
    with pytest.raises(ConfigError, match="no trace.yml found"):
        load_config(required=True)


def test_trace_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".git").mkdir()
    sub = tmp_path / "pkg"
    sub.mkdir()
    monkeypatch.chdir(sub)
    monkeypatch.delenv("TRACETOOL_CONFIG", raising=False)
    monkeypatch.delenv("TRACETOOL_TRACE_DIR", raising=False)
    assert resolve_trace_dir(None) == Path("tmp/trace")
    write(tmp_path, "trace_dir: rec")  # found in a parent directory
    assert resolve_trace_dir(None) == tmp_path.resolve() / "rec"
    monkeypatch.setenv("TRACETOOL_TRACE_DIR", "/env/dir")
    assert resolve_trace_dir(None) == Path("/env/dir")
    assert resolve_trace_dir("flag") == Path("flag")


def test_safe_repr_lists_dotted_class_names(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "safe_repr: [money.Money, app.models.Point]"))
    assert config.safe_repr == ("money.Money", "app.models.Point")
    assert load_config(write(tmp_path, "name: x")).safe_repr == ()
