"""Recordings shaped like those of real Python apps (issue 15), written as our agent writes them.

- `django_catalog`: Django's "local library" tutorial app on PostgreSQL (psycopg2): routes
  `<int:pk>`, SQL with `%s`, a model method `catalog/models/BookInstance#is_overdue` called per
  row (N+1), a module function `catalog/views.book_detail`.
- `fastapi_inventory`: FastAPI + SQLAlchemy on asyncpg: route `{item_id}`, SQL `$1::INTEGER`.
- `sqlalchemy_sqlite` / `psycopg_pyformat`: the same lookup with `?`, `:id_1` and `%(id)s`.
- `flask_shop`: a Flask app whose route hook did not run (no `normalized_path_info`): concrete
  paths only, ids of several kinds under one route; two modules with the same last name
  (`shop/users/api` and `shop/admin/api`), one module (`shop/config`) holding both functions and
  a class; an HTTP client call to a test server on an ephemeral loopback port.

The classMap follows `tracetool.agent.functions.build_class_map`: module path components are
packages; a module's functions hang under a class named after the module, a class's methods
under the class (in a package named after the module).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson

BOOK_SQL = {
    # Django / psycopg2
    "format": 'SELECT "catalog_book"."id", "catalog_book"."title" FROM "catalog_book" '
    'WHERE "catalog_book"."id" = %s LIMIT 21',
    # SQLAlchemy on asyncpg
    "numeric": 'SELECT "catalog_book"."id", "catalog_book"."title" FROM "catalog_book" '
    'WHERE "catalog_book"."id" = $1::INTEGER LIMIT 21',
    # SQLAlchemy on sqlite3
    "qmark": 'SELECT "catalog_book"."id", "catalog_book"."title" FROM "catalog_book" '
    'WHERE "catalog_book"."id" = ? LIMIT 21',
    "named": 'SELECT "catalog_book"."id", "catalog_book"."title" FROM "catalog_book" '
    'WHERE "catalog_book"."id" = :id_1 LIMIT 21',
    # psycopg 3 with a dict of parameters
    "pyformat": 'SELECT "catalog_book"."id", "catalog_book"."title" FROM "catalog_book" '
    'WHERE "catalog_book"."id" = %(id)s LIMIT 21',
}
INSTANCES_SQL = (
    'SELECT "catalog_bookinstance"."id", "catalog_bookinstance"."due_back" FROM '
    '"catalog_bookinstance" WHERE "catalog_bookinstance"."book_id" = %s'
)
BORROWER_SQL = 'SELECT "auth_user"."id" FROM "auth_user" WHERE "auth_user"."id" = %s LIMIT 21'


class Recorder:
    """Events and classMap of one recording, written like `tracetool.agent` writes them."""

    def __init__(self, name: str, database_type: str = "postgresql") -> None:
        self.name = name
        self.database_type = database_type
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []
        self.functions: dict[tuple[str, str], dict[str, Any]] = {}

    # -- code

    def fn(self, module: str, method: str, line: int, cls: str | None = None) -> tuple[str, str]:
        """Declare a function: `fn("catalog.models", "is_overdue", 80, cls="BookInstance")`."""
        defined_class = f"{module}.{cls}" if cls else module
        self.functions[(defined_class, method)] = {
            "module": module,
            "cls": cls,
            "method": method,
            "static": cls is None,
            "path": module.replace(".", "/") + ".py",
            "lineno": line,
        }
        return defined_class, method

    def class_map(self) -> list[dict[str, Any]]:
        roots: list[dict[str, Any]] = []
        index: dict[tuple[Any, ...], dict[str, Any]] = {}

        def child(key: tuple[Any, ...], siblings: list[Any], name: str, kind: str) -> Any:
            k = (*key, kind, name)
            if k not in index:
                index[k] = {"name": name, "type": kind, "children": []}
                siblings.append(index[k])
            return k

        for f in sorted(self.functions.values(), key=lambda f: (f["module"], f["method"])):
            parts = f["module"].split(".")
            owners = [(p, "package") for p in parts[:-1]]
            if f["cls"]:
                owners += [(parts[-1], "package"), (f["cls"], "class")]
            else:
                owners.append((parts[-1], "class"))
            key: tuple[Any, ...] = ()
            siblings = roots
            for name, kind in owners:
                key = child(key, siblings, name, kind)
                siblings = index[key]["children"]
            siblings.append(
                {
                    "name": f["method"],
                    "type": "function",
                    "location": f"{f['path']}:{f['lineno']}",
                    "static": f["static"],
                }
            )
        return roots

    # -- events

    def _call(self, **fields: Any) -> int:
        event_id = next(self.ids)
        self.events.append({"id": event_id, "event": "call", "thread_id": 1, **fields})
        return event_id

    def _return(self, parent: int, elapsed: float, **fields: Any) -> None:
        self.events.append(
            {
                "id": next(self.ids),
                "event": "return",
                "thread_id": 1,
                "parent_id": parent,
                "elapsed": elapsed,
                **fields,
            }
        )

    def request(
        self,
        method: str,
        path: str,
        template: str | None,
        body: Any,
        status: int = 200,
        elapsed: float = 0.02,
    ) -> None:
        request: dict[str, Any] = {
            "request_method": method,
            "path_info": path,
            "protocol": "HTTP/1.1",
            "headers": {"Host": "testserver"},
        }
        if template is not None:
            request["normalized_path_info"] = template
        call = self._call(http_server_request=request)
        body(self)
        self._return(
            call,
            elapsed,
            http_server_response={"status_code": status, "mime_type": "application/json"},
        )

    def call(self, function: tuple[str, str], body: Any = None, elapsed: float = 0.001) -> None:
        f = self.functions[function]
        call = self._call(
            defined_class=function[0],
            method_id=function[1],
            path=f["path"],
            lineno=f["lineno"],
            static=f["static"],
            parameters=[],
        )
        if body is not None:
            body(self)
        self._return(call, elapsed, return_value={"class": "builtins.NoneType", "value": "None"})

    def sql(self, text: str, elapsed: float = 0.002) -> None:
        call = self._call(sql_query={"sql": text, "database_type": self.database_type})
        self._return(call, elapsed)

    def client(self, method: str, url: str, status: int = 200) -> None:
        call = self._call(http_client_request={"request_method": method, "url": url})
        self._return(call, 0.003, http_client_response={"status_code": status})

    def document(self) -> dict[str, Any]:
        return {
            "version": "1.12",
            "metadata": {
                "name": self.name,
                "app": "realapps",
                "language": {"name": "python", "version": "3.12.3"},
                "client": {"name": "tracetool", "url": "https://example.invalid/tracetool"},
                "recorder": {"name": "pytest", "type": "tests"},
                "test_status": "succeeded",
            },
            "classMap": self.class_map(),
            "events": self.events,
        }

    def write(self, directory: Path) -> Path:
        path = directory / f"{self.name}.appmap.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(orjson.dumps(self.document()))
        return path


def django_catalog(directory: Path) -> Path:
    r = Recorder("catalog_test_book_detail")
    detail = r.fn("catalog.views", "book_detail", 40)
    renew = r.fn("catalog.views", "renew_book_librarian", 60)
    overdue = r.fn("catalog.models", "is_overdue", 80, cls="BookInstance")
    display = r.fn("catalog.models", "display_author", 30, cls="Book")

    def book_detail(pk: int) -> Any:
        def body(r: Recorder) -> None:
            def view(r: Recorder) -> None:
                r.sql(BOOK_SQL["format"])
                r.sql(INSTANCES_SQL)
                for _ in range(12):  # N+1: one borrower lookup per copy
                    r.call(overdue)
                    r.sql(BORROWER_SQL)
                r.call(display)

            r.call(detail, view, elapsed=0.015)

        return body

    r.request("GET", "/catalog/book/3", "/catalog/book/<int:pk>", book_detail(3))
    r.request("GET", "/catalog/book/7", "/catalog/book/<int:pk>", book_detail(7))
    r.request(
        "POST",
        "/catalog/book/1b6a4f1e-3c7d-4e59-a0c9-0f9b6b0e2a11/renew/",
        "/catalog/book/<uuid:pk>/renew/",
        lambda r: r.call(renew, lambda r: r.sql(BOOK_SQL["format"])),
        status=302,
    )
    return r.write(directory)


def fastapi_inventory(directory: Path) -> Path:
    r = Recorder("inventory_test_read_item")
    read = r.fn("inventory.api", "read_item", 22)
    r.request(
        "GET",
        "/items/3?verbose=1",
        "/items/{item_id}",
        lambda r: r.call(read, lambda r: r.sql(BOOK_SQL["numeric"])),
    )
    return r.write(directory)


def sqlalchemy_sqlite(directory: Path) -> Path:
    r = Recorder("reports_test_books", database_type="sqlite")
    report = r.fn("reports.jobs", "book_report", 12)

    def body(r: Recorder) -> None:
        r.sql(BOOK_SQL["qmark"])
        r.sql(BOOK_SQL["named"])

    r.call(report, body)
    return r.write(directory)


def psycopg_pyformat(directory: Path) -> Path:
    r = Recorder("sync_test_books")
    sync = r.fn("sync.worker", "sync_books", 8)
    r.call(sync, lambda r: r.sql(BOOK_SQL["pyformat"]))
    return r.write(directory)


FLASK_PATHS = [
    ("/api/v1/users/2", 200),
    ("/api/v1/users/17", 200),
    ("/api/v1/users/2/orders", 200),
    ("/confirm/3f9a0c2b7d1e4f5a", 200),  # hex
    ("/confirm/ffffffffffffffff", 410),  # letters only, still an id
    ("/confirm/Zm9vYmFyYmF6cXV4MTIzNDU2", 200),  # token
    ("/health", 200),
]


def flask_shop(
    directory: Path,
    quote_port: int = 33025,
    name: str = "shop_test_checkout",
    quote_path: str = "/quote/5",
) -> Path:
    r = Recorder(name)
    user_api = r.fn("shop.users.api", "get", 10, cls="UserResource")
    admin_api = r.fn("shop.admin.api", "post", 10, cls="AuditResource")
    load = r.fn("shop.config", "load", 5)
    settings = r.fn("shop.config", "get", 20, cls="Settings")
    helper = r.fn("shop.users.api", "_serialize", 30)
    inner = r.fn("shop.users.api", "_field", 40)

    def body(r: Recorder) -> None:
        def view(r: Recorder) -> None:
            r.call(load)
            r.call(settings)
            r.call(admin_api)
            r.call(helper, lambda r: r.call(inner, lambda r: r.call(inner)))
            r.client("GET", f"http://127.0.0.1:{quote_port}{quote_path}?currency=EUR")

        r.call(user_api, view)

    for path, status in FLASK_PATHS:
        r.request("GET", path, None, body, status=status)
    return r.write(directory)


def write_all(directory: Path) -> list[Path]:
    return [
        django_catalog(directory / "django"),
        fastapi_inventory(directory / "fastapi"),
        sqlalchemy_sqlite(directory / "jobs"),
        psycopg_pyformat(directory / "jobs"),
        flask_shop(directory / "flask"),
    ]
