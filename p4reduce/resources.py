"""Where the files the commands run live: the P4 programs and the training example.

In a checkout (or an editable install) they are the folders ``p4src/`` and ``examples/``; in an
installed wheel they ship as the data packages ``p4reduce.p4src`` and ``p4reduce.examples``
(pyproject.toml maps the folders there). An environment variable overrides each, for a user
who keeps modified copies elsewhere.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path


class ResourceNotFound(Exception):
    """A file the command needs is neither installed nor in a checkout: one line, naming it."""


def _package_dir(name: str) -> Path | None:
    """The folder of an installed data package, or None."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _candidates(env: str, package: str, folder: str) -> list[Path]:
    found = [Path(os.environ[env])] if os.environ.get(env) else []
    installed = _package_dir(package)
    if installed is not None:
        found.append(installed)
    found += [Path(__file__).resolve().parents[1] / folder, Path.cwd() / folder]
    return found


def p4src() -> Path:
    """The folder holding dense.p4, sparse.p4 and include/ (``$P4REDUCE_P4SRC`` first)."""
    for c in _candidates("P4REDUCE_P4SRC", "p4reduce.p4src", "p4src"):
        if (c / "dense.p4").is_file() and (c / "include").is_dir():
            return c
    raise ResourceNotFound(
        "cannot find the P4 programs (p4src/dense.p4): the installation is incomplete "
        "(reinstall p4reduce) or set P4REDUCE_P4SRC to a folder holding them"
    )


def example(name: str) -> Path:
    """``examples/NAME`` (``$P4REDUCE_EXAMPLES/NAME`` first)."""
    for c in _candidates("P4REDUCE_EXAMPLES", "p4reduce.examples", "examples"):
        if (c / name).is_file():
            return c / name
    raise ResourceNotFound(
        f"cannot find examples/{name}: the installation is incomplete (reinstall p4reduce) "
        "or set P4REDUCE_EXAMPLES to a folder holding it"
    )
