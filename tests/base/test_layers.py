"""The layers point one way (docs/architecture.md, "Layers"): an import check over the tree's
source (ast, no imports run). Fails on a ``host`` -> ``testbed`` import, a ``switch`` ->
``host``/``controller`` import, and the other arrows the page rules out."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the folders mapped into the p4reduce namespace (pyproject.toml's package-dir)
FOLDERS = {"switch", "controller", "host", "testbed", "p4reduce"}

# package -> the packages it must not import (prefixes of absolute module names)
FORBIDDEN = {
    "p4reduce.switch": (
        "p4reduce.host",
        "p4reduce.controller",
        "p4reduce.testbed",
        "p4reduce.stack",
    ),
    "p4reduce.controller": ("p4reduce.host", "p4reduce.testbed", "p4reduce.stack"),
    "p4reduce.host": ("p4reduce.testbed", "p4reduce.switch"),
    "p4reduce.stack": ("p4reduce.host", "p4reduce.testbed"),
    "p4reduce.contracts": ("p4reduce.",),
}
# the shared base modules (p4reduce/*.py: netaddr, bytestrings, p4info_index, grpc_tls, ...)
# sit under every layer: they import none of the layers above them
LAYERS = ("p4reduce.switch", "p4reduce.controller", "p4reduce.host", "p4reduce.testbed")
BASE_BANNED = (*LAYERS, "p4reduce.stack")
# host reaches the controller only through the registration service's HTTP API: its client
# and the job-secret helpers are that contract; everything else of the controller is internal
HOST_MAY_IMPORT = ("p4reduce.controller.client", "p4reduce.controller.credentials")


def module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if parts[0] != "p4reduce":
        parts = ["p4reduce", *parts]
    return ".".join(parts)


def imports(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, absolute module) for every import of the file, relative ones resolved."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            # "from pkg import sub" may name a submodule: check both
            out.append((node.lineno, mod))
            out += [(node.lineno, f"{mod}.{a.name}") for a in node.names]
    return out


def violations(root: Path = ROOT) -> list[str]:
    bad = []
    for folder in sorted(FOLDERS):
        for path in sorted((root / folder).rglob("*.py")):
            if "proto" in path.relative_to(root).parts:
                continue  # generated protobuf modules
            name = module_name(path, root)
            if name.count(".") == 1 and path.parent == root / "p4reduce":
                for line, mod in imports(path, root):
                    if any(mod == b or mod.startswith(b + ".") for b in BASE_BANNED):
                        bad.append(f"{path.relative_to(root)}:{line}: {name} imports {mod}")
            for owner, banned in FORBIDDEN.items():
                if not (name == owner or name.startswith(owner + ".")):
                    continue
                for line, mod in imports(path, root):
                    if mod == owner or mod.startswith(owner + "."):
                        continue
                    hit = any(
                        mod == b.rstrip(".") or mod.startswith(b.rstrip(".") + ".") for b in banned
                    )
                    if owner == "p4reduce.host" and mod.startswith("p4reduce.controller"):
                        hit = not any(mod == m or mod.startswith(m + ".") for m in HOST_MAY_IMPORT)
                        hit = hit and mod != "p4reduce.controller"
                    if hit:
                        bad.append(f"{path.relative_to(root)}:{line}: {owner} imports {mod}")
    return sorted(set(bad))


def test_the_layers_point_down() -> None:
    assert violations() == []


def test_the_check_sees_a_wrong_arrow(tmp_path: Path) -> None:
    """The check itself: a host module importing the testbed (relative and absolute) and a
    switch module importing the host are reported."""
    for folder in ("host", "switch", "controller", "testbed", "p4reduce"):
        (tmp_path / folder).mkdir()
    (tmp_path / "host" / "bad.py").write_text(
        "from ..testbed.local import LocalStack\nimport p4reduce.testbed.check\n"
        "from ..controller import jobs\nfrom ..controller.client import RegistrationClient\n"
    )
    (tmp_path / "switch" / "bad.py").write_text("from ..host import wire\n")
    (tmp_path / "p4reduce" / "base.py").write_text("from .controller import jobs\n")
    got = violations(tmp_path)
    assert got == [
        "host/bad.py:1: p4reduce.host imports p4reduce.testbed.local",
        "host/bad.py:1: p4reduce.host imports p4reduce.testbed.local.LocalStack",
        "host/bad.py:2: p4reduce.host imports p4reduce.testbed.check",
        "host/bad.py:3: p4reduce.host imports p4reduce.controller.jobs",
        "p4reduce/base.py:1: p4reduce.base imports p4reduce.controller",
        "p4reduce/base.py:1: p4reduce.base imports p4reduce.controller.jobs",
        "switch/bad.py:1: p4reduce.switch imports p4reduce.host",
        "switch/bad.py:1: p4reduce.switch imports p4reduce.host.wire",
    ]
