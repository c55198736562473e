"""The compiled pipeline: the checked syntax tree as JSON (format in docs/ir.md).

Each node becomes ``{"node": CLASS, "line": N, ...fields}``; expressions also carry their
semantic ``type``, and names carry what they resolve to (``ref``: var, param, const, action,
table, instance, ...). Folded constants are stored as ``const``. The file also carries the
preprocessed source, from which the embedded switch rebuilds the checked tree (no include
files or preprocessor needed where it runs).
"""

from __future__ import annotations

from typing import Any

from . import ast as A
from . import types as T
from .errors import SourcePos

IR_FORMAT = "p4reduce-ir"
IR_VERSION = 2
_SKIP = {
    "pos",
    "type",
    "sym",
    "resolved_params",
    "resolved_return",
    "scope",
    "cp_pending",
    "inst_type",
    "elem_type",
    "target",
    "resolved",
    "digest_name",
}


def node_json(node: Any, files: dict[str, int]) -> Any:
    if isinstance(node, list):
        return [node_json(x, files) for x in node]
    if isinstance(node, tuple):
        return [node_json(x, files) for x in node]
    if isinstance(node, SourcePos):
        return {"file": files.setdefault(node.file, len(files)), "line": node.line}
    if not isinstance(node, A.Node):
        if isinstance(node, (str, int, float, bool)) or node is None:
            return node
        return str(node)
    out: dict[str, Any] = {
        "node": type(node).__name__,
        "file": files.setdefault(node.pos.file, len(files)),
        "line": node.pos.line,
    }
    for key, value in vars(node).items():
        if key in _SKIP:
            continue
        out[key] = node_json(value, files)
    if isinstance(node, A.Expr):
        t = node.type
        if isinstance(t, T.Type) and not type(t).__module__.endswith("checker"):
            out["type"] = T.to_json(t)
    sym = getattr(node, "sym", None)
    if sym is not None:
        out["ref"] = sym.kind
        if sym.kind == "const" and isinstance(sym.value, (int, bool)):
            out["const"] = sym.value
    target = getattr(node, "target", None)
    if target is not None:
        out["call"] = target[0] if isinstance(target, tuple) else str(target)
        if isinstance(target, tuple) and len(target) > 1:
            out["callee"] = getattr(target[-1], "name", str(target[-1]))
    for attr in ("inst_type", "elem_type"):
        t = getattr(node, attr, None)
        if isinstance(t, T.Type):
            out[attr] = T.to_json(t)
    if isinstance(node, A.Param) and isinstance(getattr(node, "type", None), T.Type):
        out["param_type"] = T.to_json(node.type)
    return out


def build_ir(
    program: A.Program,
    name: str,
    p4info_text: str,
    main: A.Instance | None,
    source: str = "",
    source_file: str = "",
) -> dict[str, Any]:
    files: dict[str, int] = {}
    decls = [node_json(d, files) for d in program.decls]
    return {
        "format": IR_FORMAT,
        "version": IR_VERSION,
        "program": name,
        "arch": "v1model",
        "files": sorted(files, key=files.__getitem__),
        "main": main.name if main is not None else None,
        "declarations": decls,
        "p4info": p4info_text,
        # the preprocessed program (with #line markers): the embedded switch re-parses and
        # re-checks it (milliseconds) and generates its code from the checked tree
        "source": {"file": source_file, "text": source},
    }
