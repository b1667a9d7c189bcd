"""A one-shot command's heap faulted in ahead of its use (`tracetool.accel.fault_ahead`,
tracetool/_speedups_arena.c): objects stay intact through allocation, freeing and reuse of
the arenas; the helper thread starts only once the heap is big, and the process holds at most
`FAULT_AHEAD` more than it uses; it stays off under an address-space limit; a forked child
allocates on its own. Each case runs in a fresh interpreter (the allocator is the process's)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

try:
    from tracetool import _speedups  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - a build without a compiler
    _speedups = None

pytestmark = [
    pytest.mark.skipif(_speedups is None, reason="tracetool._speedups is not built"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only"),
]

PRELUDE = """
import gc, os, sys
def status(key):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
def threads():
    return status("Threads")
def rss_mb():
    return status("VmRSS") / 1024
def make(n, tag):  # ~n MB of small objects (tuples and short strings: pymalloc's)
    return [(i, f"{tag}-{i}", [i]) for i in range(n * 5000)]
def check(objs, n, tag):
    assert len(objs) == n * 5000
    for i, (a, b, c) in enumerate(objs):
        assert a == i and b == f"{tag}-{i}" and c == [i], (i, a, b, c)
gc.disable()
"""


def run(body: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_objects_stay_whole_through_allocation_freeing_and_reuse() -> None:
    out = run(
        """
        from tracetool.accel import FAULT_AHEAD, fault_ahead
        before = threads()
        assert fault_ahead() is True
        small = make(2, "s")  # below FAULT_AHEAD_FROM: no helper yet
        assert threads() == before, "the helper started for a small heap"
        rss0 = rss_mb()
        big = make(60, "b")  # ~300 MB of objects: the helper runs
        assert threads() == before + 1
        grown = rss_mb() - rss0
        check(big, 60, "b")
        del big  # the arenas are freed: kept mapped (16) or handed back, then reused
        again = make(60, "c")
        check(again, 60, "c")
        check(small, 2, "s")
        print(round(grown), FAULT_AHEAD >> 20)
        """
    )
    grown, ahead = map(int, out.split())
    # the objects' own memory plus at most the faulted-ahead margin (and the list's array)
    assert grown < 400 + ahead


def test_the_same_process_without_it_uses_about_as_much() -> None:
    """The margin: the same objects with and without, at most `FAULT_AHEAD` (+ slack) apart."""
    body = """
        from tracetool.accel import fault_ahead
        if {on}:
            assert fault_ahead() is True
        rss0 = rss_mb()
        objs = make(60, "b")
        print(round(rss_mb() - rss0))
        """
    off = int(run(body.format(on=False)))
    on = int(run(body.format(on=True)))
    from tracetool.accel import FAULT_AHEAD

    assert off - 8 <= on <= off + (FAULT_AHEAD >> 20) + 8, (off, on)


def test_off_under_an_address_space_limit() -> None:
    out = run(
        """
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
        from tracetool.accel import fault_ahead
        print(fault_ahead())
        objs = make(10, "x")
        check(objs, 10, "x")
        """
    )
    assert out.strip() == "False"


def test_a_forked_child_allocates_on_its_own() -> None:
    """A child forked while the helper runs (its lock perhaps held) allocates, frees and
    exits; so does the parent after it."""
    out = run(
        """
        from tracetool.accel import fault_ahead
        assert fault_ahead() is True
        keep = make(60, "p")  # the helper has started
        pid = os.fork()
        if pid == 0:
            try:
                mine = make(60, "k")
                check(mine, 60, "k")
                check(keep, 60, "p")
            except BaseException:
                os._exit(1)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        more = make(20, "q")
        check(more, 20, "q")
        print(os.waitstatus_to_exitcode(status))
        """
    )
    assert out.strip() == "0"


def test_a_second_call_changes_nothing() -> None:
    out = run(
        """
        from tracetool import _speedups
        print(_speedups.fault_ahead(16 << 20, 32 << 20), _speedups.fault_ahead(1, 1))
        try:
            _speedups.fault_ahead(-1, 0)
        except ValueError as exc:
            print("refused")
        """
    )
    assert out.split() == ["True", "True", "refused"]


def test_a_one_shot_command_leaves_its_objects_to_the_exit_and_faults_ahead(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`leave_to_exit` (sequence-diagram, prune, `stats -a`): in a one-shot run both, else
    neither (the allocator stays the test process's own: `fault_ahead` is recorded, not run)."""
    from tracetool import accel
    from tracetool.cli import common
    from tracetool.trace import document

    calls: list[str] = []

    def recorded() -> bool:
        calls.append("fault_ahead")
        return True

    monkeypatch.setattr(accel, "fault_ahead", recorded)
    monkeypatch.setattr(document, "_KEPT", None)
    monkeypatch.setitem(common._state, "one_shot", False)
    common.leave_to_exit()
    assert calls == [] and not document.left_to_exit()
    monkeypatch.setitem(common._state, "one_shot", True)
    common.leave_to_exit()
    assert calls == ["fault_ahead"] and document.left_to_exit()
