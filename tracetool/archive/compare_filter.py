"""The compare filter: what is hidden before recordings become diagrams for `compare`.

AppMap's archive (reference/appmap.md §3.8) builds its sequence diagrams with a filter made of
named "hide" options, extra names, dependency folders and `hide_external`. We keep the same
options, regexes and defaults, so our diagrams of AppMap data classify changes as AppMap does:

| option (trace.yml `compare.filter`, `archive --filter key=value`) | default |
|---|---|
| `hide`: names of hide options to enable | all of `HIDE_OPTIONS` |
| `reveal`: hide options to disable | none |
| `hide_name`: more name patterns to hide (see `tracetool.filters`) | none |
| `dependency_folders`: folders of dependencies | `vendor`, `node_modules` |
| `hide_external`: hide functions outside the project | true for ruby and python, else false |

Keys are read in snake_case and accepted in camelCase (`hideName`), consistently — AppMap
camel-cases the config on load and then reads snake_case keys, so only `hide`/`reveal` ever
worked there. Unknown keys are a `ConfigError`. Besides `key=value`, an `archive --filter`
value may be an encoded filter state (JSON or base64, `tracetool.filters.decode`); it is merged
over the compare filter (lists unioned, its booleans win).

The language that picks the `hide_external` default is trace.yml's `language` if set, else the
recording's `metadata.language.name`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tracetool import filters
from tracetool.errors import ConfigError, UsageError
from tracetool.filters import FilterState

HIDE_OPTIONS: dict[str, tuple[str, ...]] = {
    "sql_pragma": (r"/^query:PRAGMA\b/", r"/^query:[\s\S]*\bPRAGMA\b/"),
    "sql_savepoint": (r"/^query:SAVEPOINT\b/", r"/^query:[\s\S]*\bSAVEPOINT\b/"),
    "sql_show": (r"/^query:SHOW\b/",),
    "selenium": (r"/^external-route:.*\bhttp:\/\/127\.0\.0\.1:\d+\/session\/[a-f0-9]{32,}\//",),
    "pg_metadata": (r"/^query:[\s\S]*\bpg_attribute\b/",),
    "sqlite_metadata": (r"/^query:[\s\S]*\bsqlite_master\b/",),
    "ruby_included": (r"/^function:.*\.included$/",),
}
HIDE_EXTERNAL = {"ruby": True, "python": True, "java": False, "javascript": False}

_ALIASES = {
    "hide": "hide",
    "reveal": "reveal",
    "hide_name": "hide_name",
    "hideName": "hide_name",
    "dependency_folders": "dependency_folders",
    "dependencyFolders": "dependency_folders",
    "hide_external": "hide_external",
    "hideExternal": "hide_external",
}


@dataclass(frozen=True)
class CompareFilter:
    hide: tuple[str, ...] | None = None  # None: every hide option
    reveal: tuple[str, ...] = ()
    hide_name: tuple[str, ...] = ()
    dependency_folders: tuple[str, ...] | None = None
    hide_external: bool | None = None  # None: by language
    language: str | None = None  # trace.yml's, when set
    extra: Mapping[str, Any] | None = None  # an encoded filter state given on the command line

    def to_json(self) -> dict[str, Any]:
        """Stable JSON of the settings (recorded in manifests; equal settings, equal JSON)."""
        out: dict[str, Any] = {
            "hide": sorted(self.hide) if self.hide is not None else None,
            "reveal": sorted(self.reveal),
            "hide_name": sorted(self.hide_name),
            "dependency_folders": (
                sorted(self.dependency_folders) if self.dependency_folders is not None else None
            ),
            "hide_external": self.hide_external,
            "language": self.language,
        }
        if self.extra:
            out["extra"] = dict(self.extra)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CompareFilter:
        def tup(value: Any) -> tuple[str, ...] | None:
            return None if value is None else tuple(str(v) for v in value)

        return cls(
            hide=tup(data.get("hide")),
            reveal=tup(data.get("reveal")) or (),
            hide_name=tup(data.get("hide_name")) or (),
            dependency_folders=tup(data.get("dependency_folders")),
            hide_external=data.get("hide_external"),
            language=data.get("language"),
            extra=data.get("extra"),
        )

    def state(self, language: str | None) -> FilterState:
        """The filter state for a recording written in `language`."""
        enabled = [h for h in (self.hide or tuple(HIDE_OPTIONS)) if h not in self.reveal]
        names: list[str] = []
        for option in enabled:
            names.extend(HIDE_OPTIONS.get(option, ()))
        names.extend(self.hide_name)
        lang = (self.language or language or "").lower()
        hide_external = self.hide_external
        if hide_external is None:
            hide_external = HIDE_EXTERNAL.get(lang, False)
        state = FilterState(
            hide_name=tuple(sorted(set(names))),
            hide_external=hide_external,
            dependency_folders=tuple(
                sorted(self.dependency_folders or filters.DEFAULT_DEPENDENCY_FOLDERS)
            ),
        )
        if self.extra:
            state = filters.merge(filters.decode(dict(self.extra)), state)
        return state

    def query_hider(self, language: str | None) -> Callable[[str], bool]:
        """A test: does the diagram of a `language` recording leave out this SQL statement?"""
        from tracetool.trace.codeobjects import DATABASE_ROOT, ClassMap

        patterns = self.state(language).hide_name
        cmap = ClassMap.from_json([])
        database = cmap.child(None, "database", DATABASE_ROOT)

        def hides(sql: str) -> bool:
            query = cmap.child(database, "query", sql)
            return any(filters.code_object_matches(query, p) for p in patterns)

        return hides


def _strings(value: Any, key: str, source: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{source}: compare.filter.{key} must be a list of strings")


def _bool(value: Any, key: str, source: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0"):
        return value.lower() in ("true", "yes", "1")
    raise ConfigError(f"{source}: compare.filter.{key} must be true or false")


def _apply(settings: dict[str, Any], key: str, value: Any, source: str) -> None:
    attr = _ALIASES.get(key)
    if attr is None:
        known = ", ".join(sorted({v for v in _ALIASES.values()}))
        raise ConfigError(f"{source}: unknown compare filter key {key!r} (known: {known})")
    if attr == "hide_external":
        settings[attr] = _bool(value, key, source)
        return
    items = _strings(value, key, source)
    if attr in ("hide", "reveal"):
        unknown = [h for h in items if h not in HIDE_OPTIONS]
        if unknown:
            raise ConfigError(
                f"{source}: unknown hide option {unknown[0]!r} (known: {', '.join(HIDE_OPTIONS)})"
            )
    settings[attr] = items


def load_compare_filter(
    raw_config: Mapping[str, Any], cli_filters: tuple[str, ...] = (), source: str = "trace.yml"
) -> CompareFilter:
    """The compare filter from trace.yml's `compare.filter` and `--filter` values."""
    settings: dict[str, Any] = {}
    compare = raw_config.get("compare") or {}
    if not isinstance(compare, dict):
        raise ConfigError(f"{source}: compare must be a mapping")
    section = compare.get("filter") or {}
    if not isinstance(section, dict):
        raise ConfigError(f"{source}: compare.filter must be a mapping")
    for key, value in section.items():
        _apply(settings, str(key), value, source)
    language = raw_config.get("language")
    extra: dict[str, Any] | None = None
    for item in cli_filters:
        key, sep, value = item.partition("=")
        if sep and key.strip() in _ALIASES:
            _apply(settings, key.strip(), value.strip(), "--filter")
            continue
        try:
            state = filters.decode(item)
        except UsageError:
            raise UsageError(
                f"--filter {item!r}: neither key=value ({', '.join(sorted(set(_ALIASES)))}) "
                f"nor an encoded filter state"
            ) from None
        extra = filters.to_json(
            state if extra is None else filters.merge(state, filters.decode(extra))
        )
    return CompareFilter(
        language=str(language) if isinstance(language, str) else None, extra=extra, **settings
    )
