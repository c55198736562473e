"""Python's compiler, one thread at a time.

The interpreter compiles each program's generated Python, and the native engine parses that
source again to translate it into C. Switches load programs from several threads (the
P4Runtime server's handlers, tests and the BMv2 oracle running cases side by side), and
CPython 3.11 (seen on 3.11.7) can then fail a ``compile`` or ``ast.parse`` with
``SystemError: AST constructor recursion depth mismatch``: the AST validator's recursion
counter is not safe across threads. Both steps go through this lock; they take milliseconds.
"""

from __future__ import annotations

import ast
import threading
from types import CodeType

_LOCK = threading.Lock()


def compile_module(source: str, filename: str) -> CodeType:
    """``compile(source, filename, "exec")`` under the lock."""
    with _LOCK:
        return compile(source, filename, "exec")


def parse_module(source: str) -> ast.Module:
    """``ast.parse(source)`` under the lock."""
    with _LOCK:
        return ast.parse(source)
