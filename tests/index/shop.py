"""A tiny, fully known set of recordings ("the shop") for index and query tests.

| file | branch | commit | age | what |
|---|---|---|---|---|
| main/users_show.trace.json | main | aaaa1111 | 1 day | GET /users/42 → 200 (10 ms), GET /users/7 → 200 (30 ms) |
| main/orders_create.trace.json | main | bbbb2222 | 3 days | POST /orders → 500 (120 ms), PaymentError |
| feature/users_index.trace.json | feature | cccc3333 | 10 days | GET /users → 200 (50 ms), GET /users/42 → 404 (5 ms) |
| jobs/report_job.trace.json | main | dddd4444 | 1 day | no HTTP; ReportJob#perform, recursive Tree#walk |

Times are exact binary fractions where sums are asserted, so expected values are exact.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import orjson

from tests.conftest import DocBuilder

DAY = 86400.0
CONTROLLERS = "app/controllers"
USERS_RB = "app/controllers/users_controller.rb"
ORDERS_RB = "app/controllers/orders_controller.rb"


def class_map() -> list[dict[str, Any]]:
    def fn(name: str, path: str, line: int, static: bool = False, labels: Any = None) -> Any:
        out: dict[str, Any] = {
            "name": name,
            "type": "function",
            "location": f"{path}:{line}",
            "static": static,
        }
        if labels:
            out["labels"] = labels
        return out

    return [
        {
            "name": "app",
            "type": "package",
            "children": [
                {
                    "name": "controllers",
                    "type": "package",
                    "children": [
                        {
                            "name": "UsersController",
                            "type": "class",
                            "children": [
                                fn("show", USERS_RB, 10),
                                fn("index", USERS_RB, 20),
                            ],
                        },
                        {
                            "name": "OrdersController",
                            "type": "class",
                            "children": [fn("create", ORDERS_RB, 5)],
                        },
                    ],
                },
                {
                    "name": "models",
                    "type": "package",
                    "children": [
                        {
                            "name": "User",
                            "type": "class",
                            "children": [
                                fn("find", "app/models/user.rb", 5, True, ["dao.materialize"]),
                                fn("where", "app/models/user.rb", 9, True),
                            ],
                        }
                    ],
                },
            ],
        },
        {
            "name": "logging",
            "type": "package",
            "children": [
                {
                    "name": "Logger",
                    "type": "class",
                    "children": [fn("info", "logging/__init__.py", 1470, False, ["log"])],
                }
            ],
        },
    ]


def _request(b: DocBuilder, method: str, path: str, template: str | None) -> int:
    req: dict[str, Any] = {"request_method": method, "path_info": path, "protocol": "HTTP/1.1"}
    if template:
        req["normalized_path_info"] = template
    return b.call(http_server_request=req)


def _response(b: DocBuilder, call: int, status: int, elapsed: float) -> None:
    b.ret(call, elapsed=elapsed, http_server_response={"status_code": status})


def _sql(b: DocBuilder, sql: str, elapsed: float) -> None:
    call = b.call(sql_query={"database_type": "sqlite", "sql": sql})
    b.ret(call, elapsed=elapsed)


def _meta(name: str, branch: str, commit: str, status: str = "succeeded") -> dict[str, Any]:
    return {
        "name": name,
        "labels": ["api"] if branch == "main" else [],
        "app": "shop",
        "language": {"name": "python", "version": "3.11"},
        "client": {"name": "tracetool", "url": "https://example.invalid"},
        "recorder": {"name": "pytest", "type": "tests"},
        "git": {
            "repository": "git@example:shop.git",
            "branch": branch,
            "commit": commit,
            "status": ["M app.py"],
        },
        "test_status": status,
    }


def users_show() -> dict[str, Any]:
    b = DocBuilder()
    b.class_map = class_map()
    b.metadata = _meta("users show", "main", "aaaa1111")
    for user_id, total, ctrl, find, query in (
        ("42", 0.0078125, 0.0078125 / 2, 0.00390625 / 2, 0.001953125 / 2),
        ("7", 0.03125, 0.025, 0.0125, 0.0078125),
    ):
        req = _request(b, "GET", f"/users/{user_id}", "/users/{id}")
        show = b.function("UsersController", "show", USERS_RB, 10)
        found = b.function("User", "find", "app/models/user.rb", 5, static=True)
        _sql(b, f"SELECT * FROM users WHERE id = {user_id}", query)
        b.ret(found, elapsed=find)
        if user_id == "42":
            log = b.call(
                defined_class="logging.Logger",
                method_id="info",
                path="logging/__init__.py",
                lineno=1470,
                static=False,
                parameters=[{"name": "msg", "class": "str", "value": "showing user 42"}],
            )
            b.ret(log, elapsed=0.0)
        b.ret(show, elapsed=ctrl)
        _response(b, req, 200, total)
    return b.doc()


def orders_create() -> dict[str, Any]:
    b = DocBuilder()
    b.class_map = class_map()
    b.metadata = _meta("orders create", "main", "bbbb2222", status="failed")
    b.metadata["test_failure"] = {"message": "expected 201, got 500"}
    req = _request(b, "POST", "/orders", None)
    create = b.function("OrdersController", "create", ORDERS_RB, 5)
    place = b.function("OrderService", "place", "app/services/order_service.rb", 12)
    _sql(b, "INSERT INTO orders (user_id, total) VALUES (7, 9.99)", 0.0078125)
    _sql(b, "SELECT * FROM users WHERE id = 7", 0.001953125)
    b.ret(
        place,
        elapsed=0.0625,
        exceptions=[
            {
                "class": "PaymentError",
                "message": "card declined",
                "path": "app/services/order_service.rb",
                "lineno": 30,
                "object_id": 1,
            }
        ],
    )
    b.ret(create, elapsed=0.09375)
    _response(b, req, 500, 0.125)
    return b.doc()


def users_index() -> dict[str, Any]:
    b = DocBuilder()
    b.class_map = class_map()
    b.metadata = _meta("users index", "feature", "cccc3333")
    req = _request(b, "GET", "/users", "/users")
    index = b.function("UsersController", "index", USERS_RB, 20)
    where = b.function("User", "where", "app/models/user.rb", 9, static=True)
    _sql(b, "SELECT * FROM users", 0.03125)
    b.ret(where, elapsed=0.0390625)
    b.ret(index, elapsed=0.046875)
    _response(b, req, 200, 0.0500)
    req = _request(b, "GET", "/users/42", "/users/{id}")
    show = b.function("UsersController", "show", USERS_RB, 10)
    b.ret(show, elapsed=0.00390625)
    _response(b, req, 404, 0.0048828125)
    return b.doc()


def report_job() -> dict[str, Any]:
    b = DocBuilder()
    b.metadata = _meta("report job", "main", "dddd4444")
    b.metadata["recorder"] = {"name": "process", "type": "process"}
    job = b.function("ReportJob", "perform", "app/jobs/report_job.rb", 3)
    _sql(b, "SELECT count(*) FROM orders", 0.125)
    outer = b.function("Tree", "walk", "app/jobs/tree.rb", 7)
    inner = b.function("Tree", "walk", "app/jobs/tree.rb", 7)
    b.ret(inner, elapsed=0.015625)
    b.ret(outer, elapsed=0.046875)
    b.ret(job, elapsed=0.25)
    return b.doc()


SHOP = {
    "main/users_show.trace.json": (users_show, 1 * DAY),
    "main/orders_create.trace.json": (orders_create, 3 * DAY),
    "feature/users_index.trace.json": (users_index, 10 * DAY),
    "jobs/report_job.trace.json": (report_job, 1 * DAY),
}


def write(path: Path, doc: Any, age: float | None = None, now: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(doc if isinstance(doc, bytes) else orjson.dumps(doc))
    if age is not None:
        moment = (time.time() if now is None else now) - age
        os.utime(path, (moment, moment))
    return path


def make_shop(root: Path, now: float | None = None) -> Path:
    """Write the shop recordings below `root`; returns `root`."""
    for rel, (make, age) in SHOP.items():
        write(root / rel, make(), age, now)
    return root
