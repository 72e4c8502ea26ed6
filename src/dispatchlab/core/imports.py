"""Import the modules a user named on the command line (``--import MODULE``), so that the
policies, LED strategies and Π decisions they register can be used by name.

Only a command-line option calls this: a spec file or a store never imports anything (a
name in them is looked up among what is registered). A module is a dotted name found
on ``sys.path`` with the current directory first (as ``python -m`` finds it), or the path
of a ``.py`` file (imported under its file name, its folder put first on ``sys.path``).
Spawned worker processes inherit ``sys.path``; the sweep's workers import the same
modules before their first point (:func:`user_modules`).
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

from dispatchlab.core.errors import ValidationError, require

#: the modules imported by :func:`import_user_modules` in this process, in order
_IMPORTED: list[str] = []


def _put_first_on_path(folder: str) -> None:
    if folder not in sys.path:
        sys.path.insert(0, folder)


def import_user_module(text: str) -> ModuleType:
    """Import one ``--import`` value (a dotted module name or a ``.py`` file path); a
    ValidationError ``import`` naming it and the reason when it cannot be imported or
    raises while importing."""
    require(isinstance(text, str) and text.strip() != "", "import",
            f"expected a module name or a .py file (got {text!r})")
    text = text.strip()
    if text.endswith(".py") or os.sep in text or "/" in text:
        path = Path(text)
        require(path.suffix == ".py", "import", f"{text}: a file to import must end in .py")
        require(path.is_file(), "import", f"{text}: no such file")
        name = path.stem
        require(name.isidentifier(), "import",
                f"{text}: {name!r} is not a module name (letters, digits, _)")
        _put_first_on_path(str(path.resolve().parent))
    else:
        name = text
        require(all(part.isidentifier() for part in name.split(".")), "import",
                f"{text!r} is not a module name (a.b.c) or a .py file")
        _put_first_on_path(os.getcwd())
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as error:
        missing = error.name or name
        detail = "no such module" if missing == name else f"it needs {missing!r}, not found"
        raise ValidationError("import", f"{text}: {detail}") from None
    except ValidationError as error:
        raise ValidationError("import", f"{text}: {error}") from None
    except Exception as error:  # a user's module failing as it runs: say how, in one line
        message = " ".join(str(error).split()) or type(error).__name__
        raise ValidationError("import", f"{text}: {type(error).__name__}: {message}") from None
    except SystemExit as error:  # a script's sys.exit() is not a way to leave dispatchlab
        raise ValidationError("import", f"{text}: the module called sys.exit({error.code!r}) "
                              "while being imported; a policy module only registers") from None
    if name not in _IMPORTED:
        _IMPORTED.append(name)
    return module


def import_user_modules(texts: list[str] | tuple[str, ...]) -> list[ModuleType]:
    """Import every ``--import`` value in order (see :func:`import_user_module`)."""
    return [import_user_module(text) for text in texts]


def user_modules() -> tuple[str, ...]:
    """The names of the modules imported by :func:`import_user_modules` in this process."""
    return tuple(_IMPORTED)


def import_in_worker(names: tuple[str, ...], path: tuple[str, ...]) -> None:
    """A spawned worker's start: the coordinator's ``sys.path`` entries it lacks, then its
    user modules (by name), so the worker knows the same registered names."""
    for folder in reversed(path):
        _put_first_on_path(folder)
    for name in names:
        importlib.import_module(name)
