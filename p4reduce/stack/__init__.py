"""Running the p4reduce parts together as processes on one machine: the loopback stack (the
embedded switch and the registration service, started through their commands), the pool of
aggregation ports it compiles in, and process supervision.

A library layer, not the test harness: the torch backend (``p4reduce.host.torch``) starts a
loopback stack for a single-machine group, and the testbed (``p4reduce.testbed``) adds
worker processes and the BMv2 and Mininet stacks on top. It imports nothing of
``p4reduce.host`` or ``p4reduce.testbed`` (docs/architecture.md, "Layers").
"""

from .agg_ports import AggPortLease, lease_agg_port
from .loopback import LoopbackStack
from .process import Proc, Stack, StackError, terminate

__all__ = [
    "AggPortLease",
    "LoopbackStack",
    "Proc",
    "Stack",
    "StackError",
    "lease_agg_port",
    "terminate",
]
