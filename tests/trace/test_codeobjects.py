"""Code-object ids (AppMap-compatible) and event binding."""

from __future__ import annotations

from pathlib import Path

from tracetool.trace import ClassMap, load

CLASS_MAP = [
    {
        "name": "app",
        "type": "package",
        "children": [
            {
                "name": "models",
                "type": "package",
                "children": [
                    {
                        "name": "User",
                        "type": "class",
                        "children": [
                            {
                                "name": "save",
                                "type": "function",
                                "location": "app/models/user.py:10",
                                "static": False,
                                "labels": ["db"],
                            },
                            {
                                "name": "find",
                                "type": "function",
                                "location": "app/models/user.py:20",
                                "static": True,
                            },
                            {"name": "Inner", "type": "class", "children": []},
                        ],
                    }
                ],
            }
        ],
    }
]


def test_ids_follow_appmap_rules() -> None:
    cmap = ClassMap.from_json(CLASS_MAP)
    fqids = [o.fqid for o in cmap]
    assert fqids == [
        "package:app",
        "package:app/models",
        "class:app/models/User",
        "function:app/models/User#save",
        "function:app/models/User.find",
        "class:app/models/User::Inner",
    ]
    save = cmap.get("function:app/models/User#save")
    assert save is not None and save.labels == ["db"]
    assert save.package is not None and save.package.fqid == "package:app/models"
    assert save.class_ is not None and save.class_.fqid == "class:app/models/User"


def test_events_bind_by_location_then_by_name() -> None:
    cmap = ClassMap.from_json(CLASS_MAP)
    by_location = cmap.code_object_for(
        {"defined_class": "X", "method_id": "save", "path": "app/models/user.py", "lineno": 10}
    )
    assert by_location.fqid == "function:app/models/User#save"
    by_name = cmap.code_object_for(
        {"defined_class": "app.models.User", "method_id": "find", "static": True}
    )
    assert by_name.fqid == "function:app/models/User.find"
    dynamic = cmap.code_object_for(
        {"defined_class": "lib.Util", "method_id": "go", "path": "lib.py", "lineno": 1}
    )
    assert dynamic.fqid == "function:lib/Util#go"


def test_dynamic_http_objects() -> None:
    cmap = ClassMap()
    route = cmap.code_object_for(
        {
            "http_server_request": {
                "request_method": "get",
                "path_info": "/users/1",
                "normalized_path_info": "/users/{id}",
            }
        }
    )
    assert route.fqid == "route:GET /users/{id}"
    assert route.parent is not None and route.parent.fqid == "http:HTTP server requests"
    client = cmap.code_object_for(
        {"http_client_request": {"request_method": "POST", "url": "https://api.example.com/v1/pay"}}
    )
    assert client.fqid == "external-route:POST https://api.example.com/v1/pay"
    assert (
        client.parent is not None
        and client.parent.fqid == "external-service:https://api.example.com"
    )


def test_classmap_round_trips(corpus: Path) -> None:
    doc = load(corpus / "packages/cli/tests/unit/fixtures/ruby/revoke_api_key.appmap.json")
    cmap = ClassMap.from_json(doc.class_map)
    again = ClassMap.from_json(cmap.to_json())
    assert [o.fqid for o in again] == [o.fqid for o in cmap]
    assert "function:app/models/ApiKey.revoke" in cmap.by_fqid


def test_sql_events_bind_to_normalized_query_objects() -> None:
    cmap = ClassMap()
    a = cmap.code_object_for(
        {"sql_query": {"sql": "SELECT * FROM users WHERE id = 1", "database_type": "sqlite"}}
    )
    b = cmap.code_object_for(
        {"sql_query": {"sql": "SELECT * FROM users WHERE id = 2", "database_type": "sqlite"}}
    )
    assert a is b
    assert a.fqid == "query:SELECT * FROM users WHERE id = ?"
    assert a.parent is not None and a.parent.fqid == "database:Database"


def test_external_service_names_carry_no_credentials() -> None:
    cmap = ClassMap()
    route = cmap.code_object_for(
        {
            "http_client_request": {
                "request_method": "GET",
                "url": "https://svc:s3cret@api.example.com:8443/x",
            }
        }
    )
    assert (
        route.parent is not None
        and route.parent.fqid == "external-service:https://api.example.com:8443"
    )
