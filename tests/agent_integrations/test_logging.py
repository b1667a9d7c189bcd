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
    assert "tests.shop" in first["receiver"]["value"]
    assert first["receiver"]["class"] == "logging.Logger"
    assert first["static"] is False
    assert first["path"].endswith("logging/__init__.py") and first["lineno"] > 0
    assert "it failed" in calls[1]["parameters"][0]["value"]
    for call in calls:
        assert "exceptions" not in recording.return_of(call)
    # the classMap lists the log functions with the `log` label, at the events' locations
    (package,) = [p for p in recording.stop()["classMap"] if p["name"] == "logging"]
    (logger_class,) = package["children"]
    assert logger_class["name"] == "Logger"
    functions = {f["name"]: f for f in logger_class["children"]}
    assert set(functions) == {"info", "error", "log"}
    assert functions["info"]["labels"] == ["log"]
    assert functions["info"]["location"] == f"{first['path']}:{first['lineno']}"


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
