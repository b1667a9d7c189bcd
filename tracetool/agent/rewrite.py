"""Code recording on Python 3.9–3.11: configured modules are compiled from rewritten source.

Why this mechanism: before 3.12 the interpreter offers only `sys.setprofile`/`sys.settrace`,
which call a Python function for *every* call in the process (library code included) and can
only be installed on the current thread and threads started later — so either the whole app
pays ~0.5 µs per call all the time, or recording started from one thread (POST /_trace/record)
misses the others. Wrapping functions breaks identity (decorator registries keep the original),
adds a traceback frame, and needs care for signatures and pickling. Rewriting the source of
configured modules at import has none of these costs: each function's own code object gets a
prologue and epilogue, so identity, `repr`, `inspect.signature`, pickling (by qualified name)
and tracebacks (original line numbers, no extra frame) are unchanged, decorators register the
instrumented function itself, and the idle cost is one global load, one attribute load and a
branch per call. Modules imported before activation are recompiled the same way and their live
function objects get the new `__code__` in place (closures and registered views included).
Rewritten modules are cached beside their bytecode (`tracetool.agent.rewrite_cache`), so only
the first start after a change pays for the parse.

The rewrite of `def f(a, b): body`:

    def f(a, b):
        __tracetool_r__ = None
        __tracetool_c__ = __tracetool__.enter(<fid>, (a, b)) if __tracetool__.on else None
        try:
            body            # `return x` → `__tracetool_r__ = x; return __tracetool_r__`
        except BaseException as __tracetool_e__:
            <record the exception>; raise
        finally:
            <record the return of __tracetool_r__ unless the exception was recorded>

Recording the return in `finally` means it is recorded after the function's own `finally`
clauses ran, with the value actually returned — or not at all when one of them raised.

In generators and async generators each `yield v` becomes
`__tracetool__.resume(c, (yield __tracetool__.suspend(c, v)))` (when recording), so every
activation is its own call/return pair; `yield from` and `await` are left alone (an activation
spans them). Lambdas, comprehensions and class bodies are not instrumented. The function's
`locals()` shows `__tracetool_c__` and `__tracetool_r__`; that is the only visible trace.
"""

from __future__ import annotations

import ast
import re
import threading
from collections.abc import Callable
from types import CodeType
from typing import Any, cast

from tracetool.agent.functions import (
    ASYNC_GENERATOR,
    COROUTINE,
    GENERATOR,
    PLAIN,
    REGISTRY,
)
from tracetool.agent.recorder import Recorder
from tracetool.agent.rewrite_cache import placeholder

HOOK = "__tracetool__"
CALL = "__tracetool_c__"
RESULT = "__tracetool_r__"
ERROR = "__tracetool_e__"

Register = Callable[[str, str, int, "tuple[str, ...]", "tuple[str, ...]", "str | None", str], int]


class _Guard(threading.local):
    busy = False  # class default: a thread's first check needs no set-up


class Hooks:
    """The `__tracetool__` object the rewritten code calls. Never raises into the app."""

    def __init__(self, recorder: Recorder) -> None:
        self.on = recorder.active
        self._rec = recorder
        self._local = _Guard()

    def enter(self, fid: int, args: tuple) -> list | None:
        local = self._local
        if local.busy:
            return None  # a repr() the agent itself is making: not the app's call
        local.busy = True
        try:
            return self._rec.enter(REGISTRY[fid], None, args)
        except Exception:
            return None
        finally:
            local.busy = False

    def ret(self, node: list, value: Any) -> None:
        local = self._local
        if local.busy:
            return
        local.busy = True
        try:
            self._rec.leave(node, value)
        except Exception:
            pass
        finally:
            local.busy = False

    def exc(self, node: list, error: BaseException) -> None:
        local = self._local
        if local.busy:
            return
        local.busy = True
        try:
            self._rec.leave_exception(node, error)
        except Exception:
            pass
        finally:
            local.busy = False

    def suspend(self, node: list, value: Any) -> Any:
        try:
            if self._rec.hold(node):
                return value  # a generator context manager's set-up: its call stays open
        except Exception:
            pass
        self.ret(node, value)
        return value

    def resume(self, node: list, sent: Any) -> Any:
        try:
            self._rec.resume(node)
        except Exception:
            pass
        return sent


def _name(id_: str, ctx: ast.expr_context | None = None) -> ast.Name:
    return ast.Name(id=id_, ctx=ctx or ast.Load())


def _hook_call(method: str, *args: ast.expr) -> ast.Call:
    return ast.Call(
        func=ast.Attribute(value=_name(HOOK), attr=method, ctx=ast.Load()),
        args=list(args),
        keywords=[],
    )


def _recording() -> ast.Compare:
    return ast.Compare(left=_name(CALL), ops=[ast.IsNot()], comparators=[ast.Constant(None)])


def _when_recording(stmt: ast.stmt) -> ast.If:
    return ast.If(test=_recording(), body=[stmt], orelse=[])


class _Yields(ast.NodeTransformer):
    """Rewrites the yields of one generator, not of functions nested in it."""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return node

    def visit_Yield(self, node: ast.Yield) -> Any:
        self.generic_visit(node)
        value = node.value if node.value is not None else ast.Constant(None)
        recorded = _hook_call(
            "resume", _name(CALL), ast.Yield(value=_hook_call("suspend", _name(CALL), value))
        )
        plain = ast.Yield(value=node.value)
        out = ast.IfExp(
            test=ast.Compare(left=_name(CALL), ops=[ast.Is()], comparators=[ast.Constant(None)]),
            body=plain,
            orelse=recorded,
        )
        return _locate(out, node)


def _locate(node: Any, ref: Any) -> Any:
    """Give the new subtree `node` the position of `ref` wherever it has none."""
    for child in ast.walk(node):
        if "lineno" in child._attributes and not hasattr(child, "lineno"):
            ast.copy_location(child, ref)
    return node


def _blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists nested in a compound statement (not in nested functions/classes)."""
    out = []
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            out.append(block)
    for holder in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
        out.append(holder.body)
    return out


def _rewrite_returns(stmts: list[ast.stmt], async_generator: bool) -> list[ast.stmt]:
    """`return x` → `__tracetool_r__ = x; return __tracetool_r__` (the `finally` records it)."""
    out: list[ast.stmt] = []
    for stmt in stmts:
        if isinstance(stmt, ast.Return):
            if async_generator or stmt.value is None:
                out.append(stmt)  # the value is None, already in RESULT
                continue
            assign = ast.Assign(targets=[_name(RESULT, ast.Store())], value=stmt.value)
            out.append(_locate(assign, stmt))
            out.append(_locate(ast.Return(value=_name(RESULT)), stmt))
            continue
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for block in _blocks(stmt):
                block[:] = _rewrite_returns(block, async_generator)
        out.append(stmt)
    return out


def _has_own_yield(node: ast.AST) -> bool:
    todo = list(ast.iter_child_nodes(node))
    while todo:
        child = todo.pop()
        if isinstance(child, (ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        todo.extend(ast.iter_child_nodes(child))
    return False


def _decorator_kind(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    for dec in node.decorator_list:
        name = dec.id if isinstance(dec, ast.Name) else getattr(dec, "attr", None)
        if name in ("staticmethod", "classmethod"):
            return name
    return None


def _arguments(args: ast.arguments) -> tuple[list[str], list[str]]:
    """Parameter names and kinds in the order `functions.argument_names` uses."""
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    kinds = ["req"] * len(names)
    if args.vararg is not None:
        names.append(args.vararg.arg)
        kinds.append("rest")
    names.extend(a.arg for a in args.kwonlyargs)
    kinds.extend("keyreq" for _ in args.kwonlyargs)
    if args.kwarg is not None:
        names.append(args.kwarg.arg)
        kinds.append("keyrest")
    return names, kinds


class _Rewriter:
    """Instruments every function of a module, walking statements only (expressions can hold
    no function definitions but lambdas, which are not instrumented)."""

    def __init__(self, register: Register, yield_lines: set[int]) -> None:
        self.register = register
        self.yield_lines = yield_lines  # source lines mentioning `yield`: generator candidates
        self.scopes: list[tuple[str, str]] = []  # (kind, name)
        self.specs: list[tuple] = []  # what `register` was given, per instrumented function
        self.fids: list[int] = []

    def _qualname(self, name: str) -> str:
        parts: list[str] = []
        for kind, scope in self.scopes:
            parts.append(scope)
            if kind == "function":
                parts.append("<locals>")
        return ".".join((*parts, name))

    def block(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            if isinstance(stmt, ast.FunctionDef):
                self._function(stmt, is_async=False)
            elif isinstance(stmt, ast.AsyncFunctionDef):
                self._function(stmt, is_async=True)
            elif isinstance(stmt, ast.ClassDef):
                self.scopes.append(("class", stmt.name))
                self.block(stmt.body)
                self.scopes.pop()
            else:
                for block in _blocks(stmt):
                    self.block(block)

    def _is_generator(self, node: Any) -> bool:
        end = getattr(node, "end_lineno", None) or node.lineno
        if not any(line in self.yield_lines for line in range(node.lineno, end + 1)):
            return False
        return _has_own_yield(node)

    def _function(self, node: Any, *, is_async: bool) -> None:
        qualname = self._qualname(node.name)
        self.scopes.append(("function", node.name))
        self.block(node.body)  # nested functions and classes first
        self.scopes.pop()
        yields = self._is_generator(node)
        kind = (
            (ASYNC_GENERATOR if yields else COROUTINE)
            if is_async
            else (GENERATOR if yields else PLAIN)
        )
        names, kinds = _arguments(node.args)
        lineno = min([d.lineno for d in node.decorator_list] + [node.lineno])
        spec = (
            qualname,
            node.name,
            lineno,
            tuple(names),
            tuple(kinds),
            _decorator_kind(node),
            kind,
        )
        fid = self.register(*spec)
        if fid < 0:
            return  # excluded in trace.yml
        self.specs.append(spec)
        self.fids.append(fid)
        # a placeholder, bound to the fid after compiling (so the code can be cached)
        marker = ast.Constant(cast(Any, placeholder(len(self.fids) - 1)))
        body = node.body
        doc: list[ast.stmt] = []
        if (
            body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            doc, body = body[:1], body[1:]
        first = body[0] if body else node
        args_tuple = ast.Tuple(elts=[_name(n) for n in names], ctx=ast.Load())
        prologue = [
            ast.Assign(targets=[_name(RESULT, ast.Store())], value=ast.Constant(None)),
            ast.Assign(
                targets=[_name(CALL, ast.Store())],
                value=ast.IfExp(
                    test=ast.Attribute(value=_name(HOOK), attr="on", ctx=ast.Load()),
                    body=_hook_call("enter", marker, args_tuple),
                    orelse=ast.Constant(None),
                ),
            ),
        ]
        new_body = _rewrite_returns(body, kind == ASYNC_GENERATOR)
        if yields:
            segments = _Yields()
            new_body = [segments.visit(stmt) for stmt in new_body]
        if not new_body:
            new_body.append(_locate(ast.Pass(), first))
        handler = ast.ExceptHandler(
            type=_name("BaseException"),
            name=ERROR,
            body=[
                _when_recording(ast.Expr(_hook_call("exc", _name(CALL), _name(ERROR)))),
                ast.Raise(exc=None, cause=None),
            ],
        )
        # the return is recorded on the way out, after the user's own `finally` clauses ran (an
        # exception recorded by the handler wins: `ret` ignores a call that already ended)
        epilogue = _when_recording(ast.Expr(_hook_call("ret", _name(CALL), _name(RESULT))))
        wrapped = ast.Try(body=new_body, handlers=[handler], orelse=[], finalbody=[epilogue])
        for stmt in prologue:
            _locate(stmt, first)
        ast.copy_location(wrapped, first)
        _locate(handler, first)
        _locate(epilogue, first)
        node.body = [*doc, *prologue, wrapped]


_YIELD = re.compile(rb"\byield\b")


def rewrite_module(
    source: bytes | str, filename: str, register: Register, tree: ast.Module | None = None
) -> tuple[CodeType, list[tuple], list[int]]:
    """Compile `source` (its parsed `tree` if the caller has it) with every function
    instrumented: (code with placeholder function ids, the specs given to `register`, the
    ids it returned) — `rewrite_cache.bind(code, ids)` makes the code runnable."""
    raw = source.encode("utf-8") if isinstance(source, str) else source
    if tree is None:
        tree = ast.parse(raw, filename=filename)
    yield_lines: set[int] = set()
    if b"yield" in raw:
        for number, line in enumerate(raw.splitlines(), 1):
            if _YIELD.search(line):
                yield_lines.add(number)
    rewriter = _Rewriter(register, yield_lines)
    rewriter.block(tree.body)
    return compile(tree, filename, "exec", dont_inherit=True), rewriter.specs, rewriter.fids
