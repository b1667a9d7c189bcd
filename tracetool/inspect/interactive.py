"""The interactive `inspect -i` session: home screen, print, filter, undo, reset, quit.

Contract (spec `inspect`):

- The home screen is a table of the 11 fields (`search.FIELDS`): a field shows its values when
  there are few (at most `FEW` and short enough), otherwise their count. Active filters are
  listed above it.
- Commands at the prompt `Command (h)ome, (p)rint, (f)ilter, (u)ndo, (r)eset, (q)uit:`:
  `h` home; `p` asks for a field number and prints all its distinct values, numbered; `f` asks
  for a field, shows its numbered values, asks for one, and limits the result to matches that
  hold it (filters accumulate: a match must satisfy every filter); `u` removes the latest
  filter; `r` removes all filters; `q` (or end of input) quits. Anything else asks again.
- Input and output go through the `ask` and `say` callables, so the CLI can use click's prompt
  and tests can drive a session from a script.
"""

from __future__ import annotations

from collections.abc import Callable

from tracetool.inspect.search import FIELDS, Match, apply_filters, summarize

FEW = 3
SHORT = 60
PROMPT = "Command (h)ome, (p)rint, (f)ilter, (u)ndo, (r)eset, (q)uit"


class Session:
    def __init__(
        self,
        code_object: str,
        matches: list[Match],
        ask: Callable[[str], str | None],
        say: Callable[[str], None],
    ) -> None:
        self.code_object = code_object
        self.all = matches
        self.filters: list[tuple[str, str]] = []
        self.ask = ask
        self.say = say

    # -- state

    @property
    def matches(self) -> list[Match]:
        return apply_filters(self.all, self.filters)

    def values(self) -> dict[str, list[str]]:
        return summarize(self.matches)

    # -- screens

    def home(self) -> None:
        values = self.values()
        if self.filters:
            self.say("Filters:")
            titles = dict(FIELDS)
            for key, value in self.filters:
                self.say(f"  {titles[key]} = {value}")
        self.say(f"{self.code_object}: {len(self.matches)} matching events")
        width = max(len(title) for _, title in FIELDS)
        for number, (key, title) in enumerate(FIELDS, start=1):
            items = values[key]
            joined = ", ".join(items)
            shown = joined if 0 < len(items) <= FEW and len(joined) <= SHORT else str(len(items))
            self.say(f"{number:>3}  {title:<{width}}  {shown}")

    def _field(self, question: str) -> str | None:
        answer = self.ask(f"{question} (1-{len(FIELDS)}) or (h)ome")
        if answer is None or answer.strip() in ("", "h"):
            return None
        try:
            number = int(answer.strip())
        except ValueError:
            self.say(f"Not a field number: {answer.strip()}")
            return None
        if not 1 <= number <= len(FIELDS):
            self.say(f"Not a field number: {number}")
            return None
        return FIELDS[number - 1][0]

    def print_field(self) -> None:
        key = self._field("Print field")
        if key is None:
            return
        self.say(dict(FIELDS)[key] + ":")
        for number, value in enumerate(self.values()[key], start=1):
            self.say(f"{number:>4}. {value}")

    def filter(self) -> bool:
        key = self._field("Filter on field")
        if key is None:
            return False
        values = self.values()[key]
        if not values:
            self.say("That field has no values to filter on.")
            return False
        for number, value in enumerate(values, start=1):
            self.say(f"{number:>4}. {value}")
        answer = self.ask(f"Value (1-{len(values)}) or (h)ome")
        if answer is None or answer.strip() in ("", "h"):
            return False
        try:
            value = values[int(answer.strip()) - 1]
        except (ValueError, IndexError):
            self.say(f"Not a value number: {answer.strip()}")
            return False
        self.filters.append((key, value))
        return True

    # -- loop

    def run(self) -> None:
        self.home()
        while True:
            answer = self.ask(PROMPT)
            if answer is None:
                return
            command = answer.strip().lower()[:1]
            if command == "q":
                return
            if command == "h":
                self.home()
            elif command == "p":
                self.print_field()
            elif command == "f":
                if self.filter():
                    self.home()
            elif command == "u":
                if self.filters:
                    self.filters.pop()
                else:
                    self.say("No filter to undo.")
                self.home()
            elif command == "r":
                self.filters.clear()
                self.home()
