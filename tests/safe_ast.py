"""``ast.parse`` that survives CPython 3.11's shared AST recursion counter.

On CPython 3.11 the AST constructor's recursion depth lives in interpreter-wide state,
so a parse (or an import that compiles source) in another thread at the same moment can
make ours fail with ``SystemError: AST constructor recursion depth mismatch`` although
the source is fine (python/cpython#106905; seen once in ``nox -s tests``, where an xdist
worker still had threads of earlier tests). The source is parsed again, a few times,
only for that error; a real syntax error or any other failure is raised at once.
"""

from __future__ import annotations

import ast

_ATTEMPTS = 5


def parse(source: str) -> ast.Module:
    """``ast.parse(source)``, retried only for the spurious 3.11 recursion-depth error."""
    for attempt in range(_ATTEMPTS):
        try:
            return ast.parse(source)
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc) or attempt == _ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable: the last attempt returns or raises")
