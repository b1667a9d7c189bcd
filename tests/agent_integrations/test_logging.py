"""logging: each handled record is a `logging.Logger#<level>` call labeled `log` carrying the
formatted message."""

from __future__ import annotations

import logging

from tests.agent_integrations.conftest import Recording


def _log_calls(recording: Recording) -> list[dict]:
    return [c for c in recording.calls("defined_class") if c["defined_class"] == "logging.Logger"]


def test_log_records_become_log_events(recording: Recording) -> None:
    logger = logging.getLogger("tests.shop")
    logger.setLevel(logging.INFO)
    logger.info("order %s created", 42)
    logger.debug("not enabled, not recorded")
    try:
        raise ValueError("bad")
    except ValueError:
        logger.exception("it failed")
    logger.log(25, "custom level")
    calls = _log_calls(recording)
    assert [c["method_id"] for c in calls] == ["info", "error", "log"]
    first = calls[0]
    assert first["parameters"][0]["name"] == "msg"
    assert "order 42 created" in first["parameters"][0]["value"]
    assert first["receiver"]["value"] == "tests.shop"
    assert first["labels"] == ["log"]
    assert first["static"] is False
    assert first["path"].endswith("logging/__init__.py") and first["lineno"] > 0
    assert [p["name"] for p in calls[1]["parameters"]] == ["msg", "exc_info"]
    for call in calls:
        assert "exceptions" not in recording.return_of(call)


def test_tracetool_logger_is_not_recorded(recording: Recording) -> None:
    logging.getLogger("tracetool").warning("internal")
    assert _log_calls(recording) == []


def test_bad_format_args_do_not_break_logging(recording: Recording) -> None:
    logger = logging.getLogger("tests.bad")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    logger.info("%d items", "not a number")
    (call,) = _log_calls(recording)
    assert "not a number" in call["parameters"][0]["value"]
