"""Which of dispatchlab's source files a compiled function depends on, and their digest.

numba keys a cached function by its own bytecode and its own source file's stamp; a
helper it calls or inlines from another module, a constant it froze at compile time or a
type it was compiled against can change without either. :func:`dependency_digest` is
what :mod:`.cache_guard` adds to the key: a SHA-256 of every dispatchlab source file the
function can reach, found by walking what its code refers to:

* the module that defines it, and every global or closure value its code (nested code
  objects included) names: a numba dispatcher or an intrinsic is walked in turn through
  its Python function, a module through the attributes the code reads from it, a tuple or
  list through its items, any other object through the module that defines its type;
* where a name came from: ``from dispatchlab.a import X`` in the walked module adds
  ``a``'s file, and so on along a chain of re-exports (a constant such as a buffer length
  is frozen into the compiled code, and its value does not say where it was defined).

Of each dispatchlab file, the digest holds what the function can depend on
(:func:`.source_blocks.kept_source`): the module-level statements and the top-level
definitions the walk reached or a kept part of the file names, not the others. So an edit
to the report, the CLI, the statistics or a test recompiles nothing, and an edit to one
policy's ``choose`` recompiles that policy's functions only, not the other policies of its
file (the slot loop calls a policy through a first-class function, which it does not
inline). A user's function compiled against dispatchlab's helpers is walked the same way,
and its source file, and that of every compiled function of the user's it reaches, is in
the digest whole (numba's own stamp, the file's time and size, misses an edit that keeps
both).
"""

from __future__ import annotations

import ast
import hashlib
import re
import sys
import types
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from dispatchlab.compiled.source_blocks import kept_source

#: the dispatchlab package folder
PACKAGE = Path(__file__).resolve().parents[1]
_PREFIX = "dispatchlab"


def is_ours(module_name: object) -> bool:
    """Whether ``module_name`` names dispatchlab or one of its modules."""
    return isinstance(module_name, str) and (
        module_name == _PREFIX or module_name.startswith(_PREFIX + "."))


_MODULE_FILES: dict[str, Path] = {}


def _module_file(module_name: str) -> Path | None:
    """The source file of an imported module (resolved once a process: its lstat calls
    were a third of a run's digests)."""
    known = _MODULE_FILES.get(module_name)
    if known is not None:
        return known
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    if not path:
        return None
    _MODULE_FILES[module_name] = resolved = Path(path).resolve()
    return resolved


@cache
def _imported_names(module_name: str) -> dict[str, tuple[str, str | None]]:
    """``name -> (module, attribute)`` for the names a dispatchlab module binds by a
    ``from … import`` or an ``import … as`` of another dispatchlab module (attribute None:
    the name is the module itself)."""
    path = _module_file(module_name)
    if path is None or path.suffix != ".py":
        return {}
    package = module_name if path.name == "__init__.py" else module_name.rpartition(".")[0]
    bound: dict[str, tuple[str, str | None]] = {}
    for node in import_statements(path.read_bytes()):
        if isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                source = ".".join([*base, source] if source else base)
            if not is_ours(source):
                continue
            for alias in node.names:
                bound[alias.asname or alias.name] = (source, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if is_ours(alias.name) and alias.asname:
                    bound[alias.asname] = (alias.name, None)
    return bound


#: a triple-quoted string (docstrings: their examples hold import lines)
_LONG_STRING = re.compile(rb'(?s)""".*?"""|\'\'\'.*?\'\'\'')
#: a line that may start an import statement: ``from X import …`` (with a parenthesised
#: list over several lines) or ``import X …``
_IMPORT_LINE = re.compile(
    rb"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]*(?:\([^)]*\)|[^\n]*)|import[ \t]+[^\n]*)",
    re.MULTILINE)


def import_statements(source: bytes) -> list[ast.stmt]:
    """The import statements of a module's source, in order, at any depth.

    Each line that starts one outside a triple-quoted string (a docstring's examples) is
    parsed alone, not the whole module: a whole parse of each module a compiled function
    reaches was ~0.1 s of every run's start. When a line that looks like one does not
    parse alone (a backslash continuation, a comment with a parenthesis in a parenthesised
    list), the whole module is parsed instead; a test checks that both give the same
    statements for every module of the package."""
    statements: list[ast.stmt] = []
    for match in _IMPORT_LINE.finditer(_LONG_STRING.sub(b"", source)):
        try:
            statements.extend(ast.parse(match.group().strip()).body)
        except SyntaxError:
            return [node for node in _statements(ast.parse(source).body)
                    if isinstance(node, ast.Import | ast.ImportFrom)]
    return statements


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of ``body`` and the bodies nested in it (an import is a statement:
    the expressions, most of a module's nodes, are not walked)."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            nested = getattr(node, field, None)
            if isinstance(nested, list):
                yield from _statements(nested)


def _names(code: types.CodeType) -> set[str]:
    """The global and attribute names ``code`` and the code nested in it refer to."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _names(constant)
    return names


class _Walk:
    """One walk from a function over what it refers to, collecting source files."""

    def __init__(self) -> None:
        self.files: set[Path] = set()
        #: per dispatchlab file, the top-level names of it the walk reached
        self.reached: dict[Path, set[str]] = {}
        #: the numba dispatchers reached (by id), in the order found
        self.dispatchers: dict[int, Any] = {}
        self._seen: set[int] = set()

    def module(self, module_name: str, name: str | None = None) -> None:
        """Add the file of a dispatchlab module, and ``name`` among those reached in it."""
        if not is_ours(module_name):
            return
        path = _module_file(module_name)
        if path is not None:
            self.files.add(path)
            if name is not None:
                self.reached.setdefault(path, set()).add(name)

    def compiled_source(self, function: Any) -> None:
        """The source file of a user's compiled function (numba's own check of it, the
        file's time and size, misses an edit that keeps both; dispatchlab's files are
        added by module)."""
        if is_ours(getattr(function, "__module__", None) or ""):
            return
        path = Path(function.__code__.co_filename)
        if path.is_file():
            self.files.add(path.resolve())

    def binding(self, module_name: str, name: str) -> None:
        """Add the files along the chain of imports that bound ``name`` in the module."""
        for _ in range(32):  # a chain of re-exports, never a cycle
            self.module(module_name, name)
            source = _imported_names(module_name).get(name)
            if source is None:
                return
            module_name, attribute = source
            if attribute is None:
                self.module(module_name)
                return
            submodule = f"{module_name}.{attribute}"
            if submodule in sys.modules:
                self.module(submodule)
            name = attribute

    def function(self, function: Any) -> None:
        if id(function) in self._seen:
            return
        self._seen.add(id(function))
        code = getattr(function, "__code__", None)
        if code is None:
            return
        module_name = getattr(function, "__module__", None) or ""
        # (a closure's definition is the top-level function that makes it)
        self.module(module_name, function.__qualname__.split(".")[0])
        names = _names(code)
        namespace = getattr(function, "__globals__", {})
        for name in names:
            if name in namespace:
                if is_ours(module_name):
                    self.binding(module_name, name)
                self.value(namespace[name], names)
        for cell in function.__closure__ or ():
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            self.value(contents, names)
        for default in function.__defaults__ or ():
            self.value(default, names)

    def value(self, value: Any, names: set[str]) -> None:
        for inner in _functions_of(value):
            self.function(inner)
            if inner is not value:  # compiled code: a dispatcher's or an intrinsic's
                self.compiled_source(inner)
                if getattr(value, "py_func", None) is inner:
                    self.dispatchers.setdefault(id(value), value)
        if isinstance(value, types.ModuleType):
            if is_ours(value.__name__) and id(value) not in self._seen:
                self._seen.add(id(value))
                self.module(value.__name__)
                for name in names:
                    if name in vars(value):
                        self.binding(value.__name__, name)
                        self.value(vars(value)[name], names)
        elif isinstance(value, tuple | list):
            for item in value:
                self.value(item, names)
        elif not isinstance(value, types.FunctionType):
            kind = value if isinstance(value, type) else type(value)
            self.module(getattr(kind, "__module__", None) or "",
                        kind.__qualname__.split(".")[0])


def _functions_of(value: Any) -> Iterator[Any]:
    """The Python functions behind ``value``: itself, a dispatcher's ``py_func``, an
    intrinsic's definition."""
    if isinstance(value, types.FunctionType):
        yield value
    for attribute in ("py_func", "_defn"):
        inner = getattr(value, attribute, None) if not isinstance(value, type) else None
        if isinstance(inner, types.FunctionType):
            yield inner


def reachable_dispatchers(function: Any) -> list[Any]:
    """The numba dispatchers ``function``'s code can reach (what it calls or inlines, what
    those call, …), in the order the walk of :func:`dependency_files` finds them."""
    walk = _Walk()
    for inner in _functions_of(function):
        walk.function(inner)
    walk.dispatchers.pop(id(function), None)
    return list(walk.dispatchers.values())


_DIGESTS: dict[int, tuple[Any, str | None]] = {}
_FILE_BYTES: dict[Path, bytes] = {}


def _walk(function: Any) -> _Walk:
    walk = _Walk()
    for inner in _functions_of(function):
        walk.function(inner)
        walk.compiled_source(inner)
    return walk


def dependency_files(function: Any) -> set[Path]:
    """The dispatchlab source files ``function`` (a Python function or a numba
    dispatcher) depends on."""
    return _walk(function).files


def dependency_digest(function: Any) -> str | None:
    """SHA-256 of the dispatchlab sources ``function`` depends on (each file's path within
    the package and the part of it the function can depend on, :func:`.source_blocks.
    kept_source`; a user's file whole), or None when it depends on none; once a process
    per function."""
    known = _DIGESTS.get(id(function))
    if known is not None and known[0] is function:
        return known[1]
    walk = _walk(function)
    files = walk.files
    digest = hashlib.sha256()
    for path in sorted(files):
        try:
            name = path.relative_to(PACKAGE).as_posix()
        except ValueError:  # a user's file, or another copy of dispatchlab: its own path
            name = path.as_posix()
            content = path.read_bytes()  # (a user's file may change within a session)
        else:
            if path not in _FILE_BYTES:
                _FILE_BYTES[path] = path.read_bytes()
            content = kept_source(_FILE_BYTES[path], frozenset(walk.reached.get(path, ())))
        digest.update(name.encode() + b"\0" + content + b"\0")
    result = digest.hexdigest() if files else None
    _DIGESTS[id(function)] = (function, result)
    return result
