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

The rewrite of `def f(a, b): body`:

    def f(a, b):
        __tracetool_c__ = __tracetool__.enter(<fid>, (a, b)) if __tracetool__.on else None
        try:
            body            # `return x` → record the return of x, then return it
            <record return None when the body falls through>
        except BaseException as __tracetool_e__:
            <record the exception>; raise

In generators and async generators each `yield v` becomes
`__tracetool__.resume(c, (yield __tracetool__.suspend(c, v)))` (when recording), so every
activation is its own call/return pair; `yield from` and `await` are left alone (an activation
spans them). Lambdas, comprehensions and class bodies are not instrumented. The function's
`locals()` shows `__tracetool_c__`; that is the only visible trace.
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable
from types import CodeType
from typing import Any

from tracetool.agent.functions import (
    ASYNC_GENERATOR,
    COROUTINE,
    GENERATOR,
    PLAIN,
    REGISTRY,
)
from tracetool.agent.recorder import Recorder

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


class _OwnBody(ast.NodeTransformer):
    """Rewrites the returns and yields of one function, not of functions nested in it."""

    def __init__(self, segments: bool) -> None:
        self.segments = segments

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        return node

    def visit_Return(self, node: ast.Return) -> Any:
        self.generic_visit(node)
        value = node.value if node.value is not None else ast.Constant(None)
        stmts = [
            ast.Assign(targets=[_name(RESULT, ast.Store())], value=value),
            _when_recording(ast.Expr(_hook_call("ret", _name(CALL), _name(RESULT)))),
            ast.Return(value=_name(RESULT)),
        ]
        for stmt in stmts:
            ast.copy_location(stmt, node)
        return stmts

    def visit_Yield(self, node: ast.Yield) -> Any:
        self.generic_visit(node)
        if not self.segments:
            return node
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
        return ast.copy_location(out, node)


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


class _Rewriter(ast.NodeTransformer):
    def __init__(self, register: Register) -> None:
        self.register = register
        self.scopes: list[tuple[str, str]] = []  # (kind, name)

    def _qualname(self, name: str) -> str:
        parts: list[str] = []
        for kind, scope in self.scopes:
            parts.append(scope)
            if kind == "function":
                parts.append("<locals>")
        return ".".join((*parts, name))

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        self.scopes.append(("class", node.name))
        self.generic_visit(node)
        self.scopes.pop()
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._function(node, is_async=False)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self._function(node, is_async=True)

    def _function(self, node: Any, *, is_async: bool) -> ast.AST:
        qualname = self._qualname(node.name)
        self.scopes.append(("function", node.name))
        self.generic_visit(node)  # nested functions and classes first
        self.scopes.pop()
        yields = _has_own_yield(node)
        kind = (
            (ASYNC_GENERATOR if yields else COROUTINE)
            if is_async
            else (GENERATOR if yields else PLAIN)
        )
        names, kinds = _arguments(node.args)
        lineno = min([d.lineno for d in node.decorator_list] + [node.lineno])
        fid = self.register(
            qualname, node.name, lineno, tuple(names), tuple(kinds), _decorator_kind(node), kind
        )
        if fid < 0:
            return node  # excluded in trace.yml
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
        prologue = ast.Assign(
            targets=[_name(CALL, ast.Store())],
            value=ast.IfExp(
                test=ast.Attribute(value=_name(HOOK), attr="on", ctx=ast.Load()),
                body=_hook_call("enter", ast.Constant(fid), args_tuple),
                orelse=ast.Constant(None),
            ),
        )
        own = _OwnBody(segments=kind in (GENERATOR, ASYNC_GENERATOR))
        new_body: list[ast.stmt] = []
        for stmt in body:
            result = own.visit(stmt)
            new_body.extend(result if isinstance(result, list) else [result])
        # falling off the end returns None (or ends the generator)
        new_body.append(
            _when_recording(ast.Expr(_hook_call("ret", _name(CALL), ast.Constant(None))))
        )
        handler = ast.ExceptHandler(
            type=_name("BaseException"),
            name=ERROR,
            body=[
                _when_recording(ast.Expr(_hook_call("exc", _name(CALL), _name(ERROR)))),
                ast.Raise(exc=None, cause=None),
            ],
        )
        wrapped = ast.Try(body=new_body, handlers=[handler], orelse=[], finalbody=[])
        for stmt in (prologue, wrapped):
            ast.copy_location(stmt, first)
        node.body = [*doc, prologue, wrapped]
        return node


def rewrite_module(source: bytes | str, filename: str, register: Register) -> CodeType:
    """Compile `source` with every function instrumented (see module doc)."""
    tree = ast.parse(source, filename=filename)
    tree = _Rewriter(register).visit(tree)
    ast.fix_missing_locations(tree)
    return compile(tree, filename, "exec", dont_inherit=True)
