"""Pushing the pipeline that ``make build`` wrote, and fetching the running one's P4Info.

A program is named by its build prefix: ``build/dense`` stands for ``build/dense.json`` (the
device config: the embedded switch's compiled JSON, or BMv2 JSON when p4c built it) and
``build/dense.p4info.txtpb`` (P4Info text). ``dense`` alone also finds ``build/dense``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from p4reduce.proto import p4info_pb2, p4runtime_pb2

from . import program
from .errors import InvalidArgument
from .p4info import Schema
from .p4rt import Connection


def pipeline_id(device_config: bytes) -> int:
    """A pipeline's identity: the 64-bit digest of its device config, pushed as its cookie
    (``Program.cookie``) and kept with the service's stored pipeline (state.py)."""
    return int.from_bytes(hashlib.sha256(device_config).digest()[:8], "big")


@dataclass
class Program:
    name: str
    device_config_path: Path
    p4info_path: Path
    p4info: Any
    device_config: bytes

    @property
    def cookie(self) -> int:
        """A 64-bit digest of the device config, pushed as the pipeline's cookie."""
        return pipeline_id(self.device_config)


def _strip(path: Path) -> Path:
    name = path.name
    for suffix in (".p4info.txtpb", ".p4info.txt", ".p4info.pb", ".p4info.bin", ".json"):
        if name.endswith(suffix):
            return path.with_name(name[: -len(suffix)])
    return path


def resolve(prog: str | Path) -> tuple[Path, Path]:
    """(device config, P4Info) paths of a program prefix such as ``build/dense``."""
    prefix = _strip(Path(prog))
    candidates = [prefix]
    if len(prefix.parts) == 1:
        candidates.append(Path("build") / prefix)
    for p in candidates:
        config = p.with_name(p.name + ".json")
        if config.is_file():
            for suffix in (".p4info.txtpb", ".p4info.txt", ".p4info.pb", ".p4info.bin"):
                info = p.with_name(p.name + suffix)
                if info.is_file():
                    return config, info
            raise InvalidArgument(f"{config} has no P4Info beside it ({p.name}.p4info.txtpb)")
    raise InvalidArgument(f"no compiled program {prefix}.json (run make build)")


def read_p4info(path: Path) -> Any:
    data = path.read_bytes()
    info = p4info_pb2.P4Info()
    try:
        if path.suffix in (".pb", ".bin"):
            info.ParseFromString(data)
        else:
            text_format.Parse(data.decode(), info)
    except Exception as err:  # noqa: BLE001 - protobuf raises several kinds
        raise InvalidArgument(f"{path}: not a P4Info: {str(err).splitlines()[0]}") from None
    return info


def load(
    prog: str | Path | None = None,
    device_config: str | Path | None = None,
    p4info: str | Path | None = None,
) -> Program:
    """A program from its prefix, or from explicit device config and P4Info paths."""
    if prog is not None:
        config_path, info_path = resolve(prog)
    elif device_config is not None and p4info is not None:
        config_path, info_path = Path(device_config), Path(p4info)
    else:
        raise InvalidArgument("name a program (build/dense) or both a device config and a P4Info")
    for p in (config_path, info_path):
        if not p.is_file():
            raise InvalidArgument(f"{p}: no such file")
    info = read_p4info(info_path)
    return Program(_strip(config_path).name, config_path, info_path, info, config_path.read_bytes())


def push(conn: Connection, prog: Program) -> Schema:
    """SetForwardingPipelineConfig(VERIFY_AND_COMMIT): the switch starts afresh on ``prog``."""
    schema = Schema(prog.p4info)
    program.check(schema, str(prog.p4info_path))
    conn.set_pipeline(prog.p4info, prog.device_config, cookie=prog.cookie)
    return schema


def fetch(conn: Connection) -> tuple[Schema, int | None]:
    """The running pipeline's P4Info (``NoPipeline`` if none) and its cookie."""
    config = conn.get_pipeline(p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
    schema = Schema(config.p4info)
    program.check(schema)
    cookie = config.cookie.cookie if config.HasField("cookie") else None
    return schema, cookie


def fetch_config(conn: Connection) -> tuple[Any, bytes]:
    """The running pipeline's P4Info message and device config (``NoPipeline`` if none): what
    the registration service keeps to push the same pipeline again (controller/state.py)."""
    config = conn.get_pipeline(p4runtime_pb2.GetForwardingPipelineConfigRequest.ALL)
    return config.p4info, bytes(config.p4_device_config)
