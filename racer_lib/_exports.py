"""What a subpackage exports, loaded on first use (PEP 562).

A subpackage's ``__init__`` names what a user imports from it and the module each name lives in,
``{"load": "io", ...}``; :func:`lazy_exports` gives its module-level ``__getattr__`` and
``__dir__``. Nothing is imported until a name is asked for, so importing one module of the
package (the book's router store, ``racer judge run``) loads neither the others nor what they
import (PyTorch, scikit-learn, SciPy), and the package ``__init__`` holds no import statement
that would tie it to its modules.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for ``package`` (its ``__name__``): ``exports`` maps each
    exported name to the module of ``package`` that defines it."""

    def __getattr__(name: str):
        if name in exports:
            return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*vars(importlib.import_module(package)), *exports})

    return __getattr__, __dir__
