"""MeterEntry and DirectMeterEntry: two-rate three-colour meter configuration.

P4Runtime rates are units (packets or bytes) per second; the interpreter's meters, like
BMv2's, take units per microsecond, so ``cir``/``pir`` are divided by 10^6 on the way in and
multiplied (and rounded) on the way out. A MODIFY without ``config`` resets the cell (every
packet GREEN again); an unconfigured cell is read back without ``config``. Meter entries can
only be modified; ``counter_data`` (per-colour counters) is not kept and is ignored.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from p4reduce.proto import p4runtime_pb2

from . import entity_tables
from .entity_common import indexes, lookup, modify_only, read_targets
from .errors import invalid
from .state import PipelineState


def decode_config(config: Any, owner: str) -> list[tuple[float, int]]:
    """[(committed rate, burst), (peak rate, burst)] in units per microsecond."""
    cir, cburst, pir, pburst = config.cir, config.cburst, config.pir, config.pburst
    if min(cir, cburst, pir, pburst) < 0:
        raise invalid(f"{owner}: meter rates and bursts cannot be negative")
    if cir > pir:
        raise invalid(f"{owner}: the committed rate {cir} is above the peak rate {pir}")
    return [(cir / 1e6, cburst), (pir / 1e6, pburst)]


def encode_config(rates: list[tuple[float, int]]) -> Any | None:
    if not rates:
        return None
    (crate, cburst), (prate, pburst) = rates
    return p4runtime_pb2.MeterConfig(
        cir=round(crate * 1e6), cburst=cburst, pir=round(prate * 1e6), pburst=pburst
    )


# ---------------------------------------------------------------------- indexed meters
def write(state: PipelineState, update_type: int, msg: Any) -> None:
    info = lookup(state.schema.meters, msg.meter_id, "meter")
    modify_only(update_type, "meter")
    meter = state.pipeline.meters[info.name]
    cells = indexes(msg, meter.size, f"meter {info.name}")
    if msg.HasField("config"):
        rates = decode_config(msg.config, f"meter {info.name}")
        for i in cells:
            meter.array[i].set_rates(rates)
    else:
        for i in cells:
            meter.array[i].reset()


def read(state: PipelineState, msg: Any) -> Iterator[Any]:
    infos = read_targets(state.schema.meters, msg.meter_id, "meter", msg)
    for info in infos:
        meter = state.pipeline.meters[info.name]
        for i in indexes(msg, meter.size, f"meter {info.name}"):
            out = p4runtime_pb2.MeterEntry(meter_id=info.id)
            out.index.index = i
            config = encode_config(meter.array[i].get_rates())
            if config is not None:
                out.config.CopyFrom(config)
            yield p4runtime_pb2.Entity(meter_entry=out)


# ---------------------------------------------------------------------- direct meters
def _check_meter_table(state: PipelineState, te: Any) -> None:
    t = entity_tables.table_of(state, te.table_id)[0]
    if not t.direct_meter_id:
        raise invalid(f"table {t.name} has no direct meter")


def write_direct(state: PipelineState, update_type: int, msg: Any) -> None:
    modify_only(update_type, "direct meter")
    _check_meter_table(state, msg.table_entry)
    t, _, entry = entity_tables.locate(state, msg.table_entry)
    cell = entry.meter.array[0]
    if msg.HasField("config"):
        cell.set_rates(decode_config(msg.config, f"table {t.name}"))
    else:
        cell.reset()


def read_direct(state: PipelineState, msg: Any) -> Iterator[Any]:
    te = msg.table_entry
    if te.table_id == 0:
        if te.match or te.priority:
            raise invalid("a direct meter read of all tables takes no match or priority")
        ids = [t.id for t in state.schema.tables.values() if t.direct_meter_id]
    else:
        _check_meter_table(state, te)
        ids = [te.table_id]
    for tid in ids:
        sel = p4runtime_pb2.TableEntry()
        sel.CopyFrom(te)
        sel.table_id = tid
        for t, _, entry in list(entity_tables.select(state, sel)):
            out = p4runtime_pb2.DirectMeterEntry()
            out.table_entry.CopyFrom(entity_tables.encode_entry(state, t, entry))
            out.table_entry.ClearField("action")
            config = encode_config(entry.meter.array[0].get_rates()) if entry.meter else None
            if config is not None:
                out.config.CopyFrom(config)
            yield p4runtime_pb2.Entity(direct_meter_entry=out)
