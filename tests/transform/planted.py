"""A generator of recordings with planted secrets, for testing sanitize as an adversary would.

`planted_recording(seed)` returns a valid trace document and the list of secrets planted in it:
API keys, JWTs, passwords (in URLs, SQL comments, log lines), emails, card numbers (as strings,
formatted, and as JSON numbers), session cookies, UUIDs, tokens inside SQL literals and comments,
header values, nested parameter properties/items, receivers, return values, log messages,
exception messages, `path_info` with and without a route template, client URLs (userinfo,
path and query), metadata failure messages and git credentials — plus format variants that
normalization must repair first (eventUpdates carrying secrets, calls that never return,
returns without `parent_id`, legacy `status`, array `path_info`) and captured data in
unexpected shapes (issue 19, `_odd_but_valid`). The document is one AppMap's validator accepts
once normalized; `odd_shapes_recording(seed)` puts the unexpected shapes where they break it.

Secrets are random and carry digits, so none of their 6-character substrings occurs in the
schema by chance, and a path segment holding one is value-like (the spec keeps purely alphabetic
segments and host names; nothing is planted there). Numbers that stay in the document (ids,
object ids, line numbers, timings) have at most 5 digits, so a 6-digit window of a card number
cannot match one.
"""

from __future__ import annotations

import base64
import random
import string
import uuid
from typing import Any

ALNUM = string.ascii_letters + string.digits


class _Secrets:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.all: list[str] = []

    def _keep(self, value: str) -> str:
        self.all.append(value)
        return value

    def alnum(self, n: int, keep: bool = True) -> str:
        rng = self.rng
        chars = [rng.choice(ALNUM) for _ in range(n)]
        for i in rng.sample(range(n), 3):  # digits guarantee a value-like path segment
            chars[i] = rng.choice(string.digits)
        value = "".join(chars)
        return self._keep(value) if keep else value

    def api_key(self) -> str:
        prefix = self.rng.choice(["sk_live_", "AKIA", "ghp_", "xoxb-", "rk_prod_"])
        return self._keep(prefix + self.alnum(24, keep=False))

    def jwt(self) -> str:
        parts = [self.alnum(n, keep=False) for n in (18, 40, 30)]
        return self._keep("eyJ" + ".".join(parts))

    def password(self, url_safe: bool = False) -> str:
        symbols = "-_.~" if url_safe else "!#%&*()'\"\\ "
        value = self.alnum(8, keep=False) + self.rng.choice(symbols) + self.alnum(5, keep=False)
        return self._keep(value)

    def email(self) -> str:
        local = self.alnum(9, keep=False).lower()
        return self._keep(f"{local}@{self.alnum(7, keep=False).lower()}.io")

    def card(self) -> str:
        digits = [4] + [self.rng.randrange(10) for _ in range(14)]
        total = 0
        for i, d in enumerate(reversed(digits)):  # Luhn check digit
            d = d * 2 if i % 2 == 0 else d
            total += d - 9 if d > 9 else d
        digits.append((10 - total % 10) % 10)
        return self._keep("".join(map(str, digits)))

    def uuid(self) -> str:
        return self._keep(str(uuid.UUID(int=self.rng.getrandbits(128), version=4)))

    def person(self) -> str:
        return self._keep(f"Zoë Ångström-{self.alnum(6, keep=False)}")


class _Builder:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.next_id = 1
        self.object_id = 100

    def oid(self) -> int:
        self.object_id += 1
        return self.object_id

    def param(self, name: str | None, value: Any, cls: str = "str", **extra: Any) -> dict[str, Any]:
        obj: dict[str, Any] = {"class": cls, "value": value, "object_id": self.oid(), **extra}
        if name is not None:
            obj = {"name": name, **obj}
        return obj

    def call(self, thread: int = 1, **fields: Any) -> int:
        event_id = self.next_id
        self.next_id += 1
        self.events.append({"id": event_id, "event": "call", "thread_id": thread, **fields})
        return event_id

    def ret(self, parent: int | None, thread: int = 1, **fields: Any) -> int:
        event_id = self.next_id
        self.next_id += 1
        event: dict[str, Any] = {"id": event_id, "event": "return", "thread_id": thread}
        if parent is not None:
            event["parent_id"] = parent
        event.update({"elapsed": 0.25, **fields})
        self.events.append(event)
        return event_id

    def fn(
        self, cls: str, method: str, path: str, line: int, thread: int = 1, **fields: Any
    ) -> int:
        return self.call(
            thread,
            defined_class=cls,
            method_id=method,
            path=path,
            lineno=line,
            static=False,
            **fields,
        )


FUNCTIONS = [
    ("app.controllers.Users", "create", "app/controllers/users.py", 12, ["mvc.controller"]),
    ("app.services.Auth", "login", "app/services/auth.py", 40, ["security.authentication"]),
    ("app.models.User", "save", "app/models/user.py", 88, []),
    ("logging.Logger", "info", "logging/__init__.py", 1477, ["log"]),
    ("app.billing.Charge", "run", "app/billing/charge.py", 7, []),
]


def class_map() -> list[dict[str, Any]]:
    packages: dict[str, dict[str, Any]] = {}
    for cls, method, path, line, labels in FUNCTIONS:
        package, _, name = cls.rpartition(".")
        pkg = packages.setdefault(
            package, {"name": package.replace(".", "/"), "type": "package", "children": []}
        )
        function: dict[str, Any] = {
            "name": method,
            "type": "function",
            "location": f"{path}:{line}",
            "static": False,
        }
        if labels:
            function["labels"] = labels
        pkg["children"].append({"name": name, "type": "class", "children": [function]})
    return list(packages.values())


def _fn(b: _Builder, index: int, thread: int = 1, **fields: Any) -> int:
    cls, method, path, line, _ = FUNCTIONS[index]
    return b.fn(cls, method, path, line, thread, **fields)


def _odd_but_valid(b: _Builder, s: _Secrets, db: str, rng: random.Random) -> None:
    """Captured data in unexpected shapes, placed where AppMap's validator still accepts the
    document (issue 19): a list field holding an object, a bare return value, an exceptions
    object, unknown keys (of events, parameters, requests, SQL queries, exceptions), structured
    values and header values, the legacy `authorization`, SQLite double-quoted strings and text
    in `sql_query` that is not SQL."""
    key, pw, email, word = s.api_key(), s.password(), s.email(), s.alnum(14)
    tail, other = s.alnum(10), s.alnum(12)
    # on a function call AppMap's schema defines neither `message`, `exceptions` nor
    # `return_value`: any shape validates there
    odd = _fn(
        b,
        1,
        2,
        message={"q": word, email: [key]},
        exceptions={"class": "AuthError", "message": f"bad {pw}"},
        return_value=f"token={key}",
        note=f"debug {tail}",  # an event key no agent defines
        extra={"cause": {"pw": pw}, "list": [other]},
        parameters=[
            {"name": "a", "class": "str", "value": "v", "repr": pw, key: email},
            b.param("nested", "[...]", "list", items=[b.param("0", "x", repr_of=word)]),
            b.param("blob", f"{key}"[:90], "str", labels=["secret"]),
        ],
    )
    b.ret(
        odd,
        2,
        return_value=b.param(None, [tail, {"k": other}], "list"),
        exceptions=[
            {
                "class": "E",
                "message": f"no {word}",
                "object_id": b.oid(),
                "cause": f"caused by {pw}",
            }
        ],
    )
    http = b.call(
        2,
        http_server_request={
            "request_method": "GET",
            "path_info": f"/odd/{tail}",
            "normalized_path_info": "/odd/{id}",
            "authorization": f"Bearer {key}",
            "query_string": f"t={other}",
            "headers": {"X-Multi": [word, email]},
        },
        message=[b.param("q", {"deep": [pw]}, "dict")],
        parameters={"pw": {"class": "str", "value": pw}},  # not a field of this event kind
    )
    for sql in (
        f'SELECT * FROM users WHERE email = "{email}" AND token IN ("{key}", "{other}")',
        f'INSERT INTO "t" ("a", "b") VALUES ("{word}", "{tail}")',
        f'SELECT "{pw}" FROM users',  # a string or a column: unreliable, tokenized whole
    ):
        q = b.call(2, sql_query={"database_type": "sqlite", "sql": sql, "binds": [pw, key]})
        b.ret(q, 2)
    for sql in (f"AUTH {word}", f"SET my.api_key = {key}", f"{tail} not sql {other}"):
        q = b.call(2, sql_query={"database_type": db, "sql": sql}, receiver=f"conn {pw}")
        b.ret(q, 2)
    b.ret(http, 2, http_server_response={"status_code": 200, "headers": {"X-T": word}})


def odd_shapes_recording(seed: int) -> tuple[dict[str, Any], list[str]]:
    """Captured fields in the shapes issue 19 names, where they belong (so AppMap's validator
    rejects the input): `parameters` / `message` objects, a bare-string `return_value`, an
    `exceptions` object, a `receiver` list, headers as pairs and as a string, strings among
    nested `properties`, a string `sql_query`, a string `http_client_request`."""
    rng = random.Random(seed)
    s = _Secrets(rng)
    b = _Builder()
    key, pw, email, word, tail = s.api_key(), s.password(), s.email(), s.alnum(14), s.alnum(10)
    call = _fn(
        b,
        0,
        parameters={"password": {"class": "str", "value": pw}, email: key},
        receiver=[word, {"k": tail}],
    )
    b.ret(call, return_value=f"{key}", exceptions={"class": "E", "message": f"bad {pw}"})
    nested = _fn(
        b, 2, parameters=[b.param("p", "{...}", "dict", properties=[word, {"value": tail}])]
    )
    b.ret(nested, return_value=42)
    http = b.call(
        http_server_request={
            "request_method": "POST",
            "path_info": f"/login/{word}",
            "headers": [["Authorization", f"Bearer {key}"], f"Cookie: sid={tail}", ["X"]],
        },
        message={"password": pw, "email": email},
    )
    client = b.call(http_client_request=f"POST https://svc:{pw}@api.io/{tail}", message=[])
    b.ret(client, http_client_response={"status_code": 200, "headers": f"Set-Cookie: {word}"})
    q = b.call(sql_query=f"SELECT * FROM u WHERE pw = '{pw}' AND k = '{key}'")
    b.ret(q)
    b.ret(http, http_server_response={"status_code": 200, "headers": {"A": {"nested": email}}})
    doc = {
        "version": "1.12",
        "metadata": {
            "name": "odd shapes",
            "client": {"name": "tracetool", "url": "https://example.invalid/tracetool"},
            "recorder": {"name": "pytest", "type": "tests"},
            "exception": {"class": "E", "message": {"text": f"failed {pw}"}},
            "test_failure": f"assert {key}",
        },
        "classMap": class_map(),
        "events": b.events,
    }
    return doc, s.all


def planted_recording(seed: int) -> tuple[dict[str, Any], list[str]]:
    """A trace document with secrets planted everywhere captured data lives (module doc)."""
    rng = random.Random(seed)
    s = _Secrets(rng)
    b = _Builder()
    api, jwt, email, card, user_id = s.api_key(), s.jwt(), s.email(), s.card(), s.uuid()
    cookie, reset = s.alnum(32), s.alnum(24)
    pw_url, pw = s.password(url_safe=True), s.password()
    basic = s._keep(base64.b64encode(f"svc:{pw}".encode()).decode())
    card_spaced = s._keep(" ".join(card[i : i + 4] for i in range(0, 16, 4)))
    person = s.person()
    db = rng.choice(["postgres", "sqlite", "mysql"])

    # an HTTP request with a route template: its concrete path is tokenized whole
    http = b.call(
        http_server_request={
            "request_method": "POST",
            "path_info": f"/users/{user_id}/tokens/{api}",
            "normalized_path_info": "/users/{id}/tokens/{token}",
            "protocol": "HTTP/1.1",
            "headers": {
                "Authorization": f"Bearer {jwt}",
                "Cookie": f"session={cookie}; theme=dark",
                "X-Api-Key": api,
            },
        },
        message=[
            b.param("password", pw),
            b.param("card", card_spaced),
            b.param(
                "profile",
                "{...}",
                "dict",
                properties=[
                    b.param("email", email),
                    b.param(
                        "cards",
                        "[...]",
                        "list",
                        items=[b.param("0", card), b.param("1", int(card), "int")],
                    ),
                ],
            ),
        ],
    )
    ctrl = _fn(b, 0, receiver=b.param("self", f"<Users email={email}>", "app.controllers.Users"))
    auth = _fn(b, 1, parameters=[b.param("email", f"'{email}'"), b.param("password", repr(pw))])
    log = _fn(b, 3, parameters=[b.param("msg", f"login {email} with {pw} from {person}")])
    b.ret(log)
    sql_params = [
        f"SELECT * FROM users WHERE email = '{email}' AND api_key = '{api}' /* req {cookie} */",
        f"UPDATE users SET name = 'O''{person}', card = {card} WHERE id = 42 -- {pw_url}",
        f"INSERT INTO sessions (token, jwt) VALUES ('{reset}', '{jwt}')",
    ]
    for sql in sql_params:
        q = b.call(sql_query={"database_type": db, "sql": sql, "explain_sql": f"EXPLAIN {sql}"})
        b.ret(q)
    broken = b.call(sql_query={"database_type": db, "sql": f"SELECT 'never closed {api}"})
    b.ret(broken)
    b.ret(
        auth,
        return_value=b.param(None, f"Session(user={user_id}, token={api})", "app.Session"),
        exceptions=[
            {
                "class": "AuthError",
                "message": f"bad password {pw} for {email}",
                "object_id": b.oid(),
                "path": "app/services/auth.py",
                "lineno": 41,
            }
        ],
    )
    charge = _fn(
        b,
        4,
        parameters=[
            b.param("card", int(card), "int"),
            b.param("meta", {"note": pw, api: [card_spaced]}, "dict"),
        ],
    )
    client = b.call(
        http_client_request={
            "request_method": "POST",
            "url": f"https://svc:{pw_url}@api.partner.io/v1/cards/{card}/charges/{user_id}"
            f"?api_key={api}#{reset}",
            "headers": {"Authorization": f"Basic {basic}", "Idempotency-Key": [reset, reset]},
        },
        message=[b.param("amount", "1999"), b.param("token", jwt)],
    )
    b.ret(
        client,
        http_client_response={
            "status": 201,
            "headers": {"Set-Cookie": f"sid={cookie}"},
            "return_value": b.param(None, f'{{"id": "{user_id}", "email": "{email}"}}'),
        },
    )
    b.ret(charge, return_value=b.param(None, card_spaced))
    save = _fn(b, 2, receiver=b.param("self", f"User({email})", "app.models.User"))
    _fn(b, 3, parameters=[b.param("msg", f"never returns {reset}")])  # unreturned call
    b.ret(save)
    b.ret(ctrl)
    b.ret(
        http,
        http_server_response={
            "status_code": 302,
            "headers": {
                "Location": f"https://app.site.io/welcome?code={reset}",
                "Set-Cookie": f"session={cookie}",
            },
            "mime_type": "text/html",
        },
    )

    # a second thread: a request without a route template, a parentless return, array path_info
    plain = b.call(
        2,
        http_server_request={
            "request_method": "GET",
            "path_info": f"/reset/{reset}/confirm/{email}?u={user_id}#{api}",
            "headers": {"Referer": f"https://mail.site.io/open?t={jwt}"},
        },
        message=[],
    )
    mine = _fn(b, 2, 2, parameters=[b.param("u", user_id)])
    b.events.append(
        {
            "id": b.next_id,
            "event": "return",
            "thread_id": 2,
            "method_id": "save",
            "defined_class": "app.models.User",
            "return_value": b.param(None, api),
        }
    )
    b.next_id += 1
    b.ret(plain, 2, http_server_response={"status_code": 200})
    legacy = b.call(
        3,
        http_server_request={"request_method": "GET", "path_info": ["/files", f"{card}"]},
        message=[],
    )
    b.ret(legacy, 3, http_server_response={"status": 404})
    del mine

    _odd_but_valid(b, s, db, rng)

    # an event update replacing a call with one that carries another secret
    target = next(e for e in b.events if e.get("method_id") == "login")
    updates = {
        str(target["id"]): {
            **target,
            "parameters": [*target["parameters"], b.param("otp", s.alnum(12))],
        }
    }

    doc = {
        "version": "1.12",
        "metadata": {
            "name": "planted",
            "labels": ["security"],
            "app": "shop",
            "client": {"name": "tracetool", "url": "https://example.invalid/tracetool"},
            "recorder": {"name": "pytest", "type": "tests"},
            "git": {
                "repository": f"https://deploy:{s.alnum(20)}@git.site.io/shop.git",
                "branch": "main",
                "commit": "f" * 40,
                "status": [],
            },
            "test_status": "failed",
            "test_failure": {
                "message": f"assert '{api}' == '{email}'",
                "location": "tests/test_auth.py:9",
            },
            "exception": {"class": "AssertionError", "message": f"token {jwt}"},
        },
        "classMap": class_map(),
        "events": b.events,
        "eventUpdates": updates,
    }
    return doc, s.all
