"""`tracetool inspect <type>:<identifier>`: search recordings for a code object (spec)."""

from __future__ import annotations

import click

from tracetool.cli.common import common_options


@click.command("inspect")
@click.argument("code_object", metavar="CODE_OBJECT")
@click.option(
    "--trace-dir",
    metavar="DIR",
    help="Directory searched recursively (default: trace.yml trace_dir, else tmp/trace).",
)
@click.option(
    "--query-db",
    metavar="PATH",
    help="query.db used to skip recordings that cannot match (default: the index of trace_dir).",
)
@click.option("-i", "--interactive", is_flag=True, help="Interactive table mode.")
@common_options
def command(
    code_object: str, trace_dir: str | None, query_db: str | None, interactive: bool
) -> None:
    """Find the events of a code object and their context (callers, SQL, requests …).

    \b
    CODE_OBJECT is <type>:<identifier>, for example
      function:app/models/User#save   function:app/models/User.find (static)
      function:catalog.views.renew    (dotted Python names work too)
      class:app/models/User           package:app/models
      route:GET /users/:id            (matches /users/{pk}, /users/<int:pk>)
      query:SELECT * FROM users WHERE id = ?
      table:users                     database:
    """
    from tracetool.cli.common import is_one_shot
    from tracetool.cli.render import print_json, warn
    from tracetool.config import resolve_trace_dir
    from tracetool.errors import NotFoundError
    from tracetool.inspect import find, parse_code_object, report
    from tracetool.inspect.search import not_found_message
    from tracetool.trace.document import dispose, free_at_exit, gc_paused

    ref = parse_code_object(code_object)
    directory = resolve_trace_dir(trace_dir)
    if not directory.is_dir():
        raise NotFoundError(f"{directory}: no such directory (pass --trace-dir)")
    with gc_paused():
        matches = find(ref, directory, warn=warn, query_db=query_db)
        if is_one_shot() and matches:
            # The matches (18k, ~13 containers each, for a common function) are left to the
            # exit to free, and frozen out of the cyclic GC's sight before it runs again: made
            # while it was paused, its first collection would walk them all (~0.1–0.3 s).
            free_at_exit()
            dispose(matches)
    if not matches:
        raise NotFoundError(not_found_message(ref, directory, query_db))
    if not interactive:
        print_json(report(ref, directory, matches))
        return
    from tracetool.inspect.interactive import Session

    def ask(question: str) -> str | None:
        try:
            answer: str = click.prompt(question, default="", show_default=False)
        except click.Abort:
            click.echo()
            return None
        return answer

    Session(ref.text, matches, ask, click.echo).run()
