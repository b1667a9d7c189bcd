"""The sanitize guarantee, tested as an adversary would (issue 7, item 3).

For generated recordings with planted secrets: no secret, nor any 6-character piece of one,
survives anywhere in the sanitized bytes, whatever the shape of the field holding it (issue 19);
every schema field is unchanged; the result still loads, has the same call-tree structure and
passes AppMap's validator; a copied `sanitized` marker protects nothing. For the shared corpus: the same structural checks,
every captured value is a token or allowlisted, no quoted SQL literal and no numeric path
segment survives.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, Callable

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.conftest import corpus_recordings
from tests.transform.checks import (
    assert_every_value_masked,
    assert_no_secret_survives,
    assert_schema_and_structure_kept,
    sanitized,
    strings,
)
from tests.transform.conftest import needs_sql
from tests.transform.planted import odd_shapes_recording, planted_recording
from tracetool.trace import parse
from tracetool.transform.sanitize import SanitizeOptions, sanitize_bytes

SEEDS = range(40)

# --- planted secrets ----------------------------------------------------------------------------


@needs_sql
@pytest.mark.parametrize("seed", SEEDS)
def test_no_planted_secret_survives(seed: int) -> None:
    data, secrets = planted_recording(seed)
    raw = orjson.dumps(data)
    for secret in secrets:  # the generator really planted them
        assert secret.encode() in raw or secret in "\x00".join(strings(data)), secret
    out, result = sanitized(data)
    assert_no_secret_survives(out, secrets)
    assert_schema_and_structure_kept(data, result)
    assert_every_value_masked(result)


@needs_sql
def test_planted_recordings_sanitized_pass_appmaps_validator(
    tmp_path: Path, appmap_validate: Callable[[Iterable[Path]], int]
) -> None:
    """The planted recordings (odd-but-valid shapes included) validate once sanitized."""
    paths = []
    seeds = range(12)  # (every seed's secrets are checked above; here the validator's verdict)
    for seed in seeds:
        data, secrets = planted_recording(seed)
        out, _result = sanitized(data)
        assert_no_secret_survives(out, secrets)
        path = tmp_path / f"planted-{seed}.appmap.json"
        path.write_bytes(out)
        paths.append(path)
    assert appmap_validate(paths) == len(seeds)


@needs_sql
@pytest.mark.parametrize("seed", range(10))
def test_no_secret_survives_in_fields_of_unexpected_shapes(seed: int) -> None:
    """Issue 19: `parameters`/`message` objects, a bare `return_value`, an `exceptions` object,
    header pairs and strings, strings among `properties`, a string `sql_query` or request…"""
    data, secrets = odd_shapes_recording(seed)
    raw = orjson.dumps(data)
    for secret in secrets:
        assert secret.encode() in raw or secret in "\x00".join(strings(data)), secret
    out, result = sanitized(data)
    assert_no_secret_survives(out, secrets)
    assert_schema_and_structure_kept(data, result)
    assert_every_value_masked(result)


@needs_sql
@pytest.mark.parametrize("maker", [planted_recording, odd_shapes_recording])
def test_a_copied_sanitized_marker_does_not_protect_secrets(maker: Any) -> None:
    """Issue 19: a marker copied onto an unsanitized recording, even with this version and the
    same options, is not trusted: the recording is sanitized."""
    clean, _ = sanitized(planted_recording(99)[0])
    data, secrets = maker(5)
    data["metadata"]["sanitized"] = orjson.loads(clean)["metadata"]["sanitized"]
    out, report = sanitize_bytes(orjson.dumps(data), SanitizeOptions(), "t")
    assert out is not None and report.status == "sanitized"
    assert_no_secret_survives(out, secrets)
    again, report = sanitize_bytes(out, SanitizeOptions(), "t")
    assert again is None and report.status == "skipped"


@needs_sql
def test_planted_secrets_survive_only_where_allowed() -> None:
    data, secrets = planted_recording(7)
    out, _result = sanitized(data, secrets[0])
    assert_no_secret_survives(out, secrets[1:])
    assert secrets[0].encode() in out  # the allowed value, where it is a whole value


@needs_sql
def test_resanitizing_a_sanitized_recording_changes_nothing_but_the_marker() -> None:
    data, secrets = planted_recording(3)
    _out, first = sanitized(data, "dark")
    first["metadata"]["sanitized"]["version"] = "0.0.0"  # force re-application
    again, second = sanitized(first)
    assert second["events"] == first["events"]
    assert_no_secret_survives(again, secrets)


@needs_sql
@settings(
    max_examples=60,
    derandomize=True,
    deadline=None,  # a shared machine; the first example also warms the SQL tokenizers
    suppress_health_check=[HealthCheck.too_slow],
)
@example(secret="sanitize", db=None)  # a word of the sanitize marker is not a leak
@given(
    secret=st.text(
        alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
        min_size=8,
        max_size=40,
    ).filter(lambda s: len(set(s)) > 4 and s.strip() == s),
    db=st.sampled_from(["postgres", "sqlite", "mysql", "oracle", None]),
)
def test_any_text_in_values_headers_messages_and_sql_literals_is_masked(
    secret: str, db: Any
) -> None:
    quoted = secret.replace("'", "''")
    dquoted = secret.replace('"', '""')
    data = {
        "metadata": {"name": "h"},
        "classMap": [],
        "events": [
            {
                "id": 1,
                "event": "call",
                "thread_id": 1,
                "sql_query": {
                    "database_type": db,
                    "sql": f"SELECT a FROM t WHERE b = '{quoted}' /* {secret} */",
                },
            },
            {"id": 2, "event": "return", "thread_id": 1, "parent_id": 1},
            {
                "id": 3,
                "event": "call",
                "thread_id": 1,
                "http_client_request": {
                    "request_method": "GET",
                    "url": "http://h.io/x",
                    "headers": {"X-A": secret},
                },
                "message": [{"name": "q", "class": "str", "value": secret}],
            },
            {
                "id": 4,
                "event": "return",
                "thread_id": 1,
                "parent_id": 3,
                "exceptions": [{"class": "E", "message": secret}],
                "return_value": {"class": "str", "value": repr(secret)},
            },
            # issue 19: SQLite double quotes, unexpected shapes, unknown keys
            {
                "id": 5,
                "event": "call",
                "thread_id": 1,
                "sql_query": {
                    "database_type": "sqlite",
                    "sql": f'SELECT a FROM t WHERE b = "{dquoted}"',
                },
                "parameters": {"p": secret},
                "note": secret,
            },
            {
                "id": 6,
                "event": "return",
                "thread_id": 1,
                "parent_id": 5,
                "return_value": secret,
                "exceptions": {"message": [secret]},
            },
        ],
    }
    _out, result = sanitized(data)
    schema = (
        "SELECT a FROM t WHERE b = ? http://h.io/x X-A class str name q E return call sqlite note"
    )
    # the sanitize marker is the tool's own words ("sanitized", versions, tokens), not captured data
    metadata = {k: v for k, v in result["metadata"].items() if k != "sanitized"}
    if secret not in schema:
        assert secret not in "\x00".join(strings({**result, "metadata": metadata}))
    assert_every_value_masked(result)
    assert_schema_and_structure_kept(data, result)


# --- the shared corpus ----------------------------------------------------------------------------


@needs_sql
@pytest.mark.parametrize("path", corpus_recordings(), ids=lambda p: p.name)
def test_corpus_recording_sanitized_keeps_schema_and_masks_values(path: Path) -> None:
    data = orjson.loads(path.read_bytes())
    out, result = sanitized(data)
    parse(out, str(path))
    assert_schema_and_structure_kept(data, result)
    assert_every_value_masked(result)
