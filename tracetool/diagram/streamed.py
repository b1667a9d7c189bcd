"""A big recording's sequence diagram, built a batch of root actions at a time.

Contract:

- `stream_diagram(path, options)` returns None for a recording of at most `threshold` bytes
  (default `WHOLE_LIMIT`, 64 MiB: read whole, which costs ~5× the file in memory but 20–40%
  less CPU than the two passes below; beyond it the peak stays ~140 MB whatever the size) and for one
  whose calls cannot be paired tree by tree (a return naming a call of a finished tree:
  `tracetool.trace.tree.CallPairing.late`); callers then build the diagram whole
  (`build_diagram`).
- Otherwise a `StreamedDiagram`: `actors` are final (ordered and named as `build_diagram` does)
  and `batches()` yields the root actions once, in order, a batch of finished call trees at a
  time, each batch complete (subtree digests, loops folded); their concatenation is
  `build_diagram(doc, options).root_actions`, action for action. Memory follows the biggest
  call tree and the held batch, not the recording (but for 4 bytes a call, below).
- Two passes over the file (`tracetool.trace.stream.open_stream`, same errors as a whole read).
  The first reads `EventHead`s and builds no tree: `CallPairing` gives each call the position of
  its tree's root (pre-order is (root position, call position)), and each call is bound to its
  code object through the function cache — the live code objects, the included ones and the
  actors in order of first appearance, all needed before the first action is written; it keeps
  each call's code object number (4 bytes a call: the one thing that grows with the recording).
  The second reads the slim fields, builds the call trees a batch of finished roots at a time
  (`TreeBatches`) and gives each node the code object the first pass bound its call to: nothing
  is bound twice.
- No filter: `filter_nodes` works on the whole tree (limitRootEvents looks at every root).
"""

from __future__ import annotations

import itertools
import operator
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracetool import accel
from tracetool.diagram import WHOLE_LIMIT  # (module doc; in the package, for `read_ahead`)
from tracetool.diagram.builder import (
    ActionFactory,
    Actors,
    DiagramOptions,
    actions_of,
    finish,
    included_code_objects,
    live_code_objects,
)
from tracetool.diagram.model import Action, Actor
from tracetool.errors import TraceFormatError
from tracetool.filters.apply import BindState, bind_calls
from tracetool.trace.codeobjects import CodeObject
from tracetool.trace.document import reuse_freed_buffers
from tracetool.trace.slim import SlimEvent
from tracetool.trace.stream import STREAM_THRESHOLD, TraceStream, file_size, open_stream
from tracetool.trace.tree import CallPairing, TreeBatches, blocks_of, release

# events added to the call trees at a time, when set (else as the reader reads them: finished
# trees are taken out between blocks)
BLOCK = 0


@dataclass
class StreamedDiagram:
    stream: TraceStream  # the first pass's (read again: `TraceStream.again`)
    options: DiagramOptions
    actors: list[Actor]
    registry: Actors
    objects: list[CodeObject]  # every code object bound, by number
    codes: array[int]  # per call, in document order: the number of its code object
    actions: int = 0  # actions handed out so far (loops included, as `len(Diagram)` counts)
    _used: bool = field(default=False, repr=False)

    def batches(self) -> Iterator[list[Action]]:
        """The root actions, in batches (module doc); once."""
        assert not self._used, "a streamed diagram is read once"
        self._used = True
        factory = ActionFactory(self.options.client_routes)
        objects, codes = self.objects, self.codes
        trees = TreeBatches()
        created: list[Any] = []
        trees.builder.created = created
        cos: dict[int, CodeObject] = {}  # id(node) -> its code object, for the nodes held
        done = 0  # calls read
        blocks = _blocks(self.stream.again(SlimEvent))
        for final, block in itertools.chain(((False, b) for b in blocks), ((True, []),)):
            if block:
                trees.add(block)
                end = done + len(created)
                if end > len(codes):
                    raise TraceFormatError(f"{self.stream.path}: changed while it was read")
                cos.update(zip(map(id, created), map(objects.__getitem__, codes[done:end])))
                created.clear()
                done = end
            roots = trees.take(final)
            if not roots:
                continue
            actions = actions_of(roots, cos, self.registry, factory)
            for node in trees.nodes:
                del cos[id(node)]
            release(roots, trees.nodes)
            self.actions += finish(actions, self.options)
            if actions:
                yield actions
        if done != len(codes):
            raise TraceFormatError(f"{self.stream.path}: changed while it was read")


def stream_diagram(
    path: Path, options: DiagramOptions, threshold: int | None = None
) -> StreamedDiagram | None:
    """The diagram of a big recording, to read batch by batch (module doc); None to build it
    whole."""
    limit = WHOLE_LIMIT if threshold is None else threshold
    if file_size(path) <= limit:
        return None
    stream = open_stream(
        path, threshold=min(limit, STREAM_THRESHOLD), header_keys=("classMap",), heads=True
    )
    if not stream.streamed:
        return None
    reuse_freed_buffers()  # both passes read the file a block at a time
    cmap = accel.class_map(stream.class_map)
    state = BindState(cmap, sql_names=bool(options.expand or options.exclude))
    # every bound code object by number (from 0), with where `build_diagram`'s walk first
    # meets it: the position of its call's root, then of the call (`CallPairing`)
    objects: list[CodeObject] = []
    number: dict[int, int] = {}  # id(code object) -> its number
    first: list[int] = []  # number -> where
    codes = array("I")
    pairing = CallPairing()
    for block in _blocks(stream):
        base = pairing.position
        at, links = pairing.add(block)
        cos = bind_calls([block[i] for i in at], cmap, state)
        ids = list(map(id, cos))
        if not number.keys() >= set(ids):  # (rare: code objects met for the first time)
            for co in cos:
                if id(co) not in number:
                    number[id(co)] = len(objects)
                    objects.append(co)
                    first.append(_NEVER)
        block_codes = list(map(number.__getitem__, ids))
        codes.extend(block_codes)
        # where each code object of the block is first met: the smallest (root, call) position
        wheres = [(links[i] << 32) | (base + i) for i in at]
        met = sorted(zip(wheres, block_codes), reverse=True)
        for code, where in dict(zip(map(_second, met), map(_first, met))).items():
            if where < first[code]:
                first[code] = where
    if pairing.late:
        return None
    registry = Actors(included_code_objects(cmap.roots, live_code_objects(objects), options))
    for code in sorted(range(len(objects)), key=first.__getitem__):
        registry.actor_for(objects[code])  # actors are made in order of first appearance
    return StreamedDiagram(stream, options, registry.sorted(), registry, objects, codes)


_NEVER = 1 << 64  # after every (root, call) position
_first, _second = operator.itemgetter(0), operator.itemgetter(1)


def _blocks(stream: TraceStream) -> Iterator[list[Any]]:
    if BLOCK:  # (tests: blocks of a few events)
        return blocks_of(itertools.chain.from_iterable(stream.event_blocks()), BLOCK)
    return stream.event_blocks()
