"""PyTorch integration: the ``p4reduce`` torch.distributed backend and a DDP comm hook.

    import p4reduce.host.torch                      # registers the "p4reduce" backend
    dist.init_process_group("p4reduce")             # loopback switch + controller on rank 0
    dist.init_process_group("p4reduce", pg_options=P4ReduceOptions(url="http://…:9560"))
    dist.all_reduce(t)                              # float32/int32 SUM/AVG: through the switch
    p4reduce.host.torch.stats()                     # AllreduceStats of this rank's calls

    # or keep gloo and send only DDP's gradient buckets through the switch:
    state = HookState.create()                      # collective
    ddp.register_comm_hook(state, allreduce_hook)

docs/torch.md describes the options, what goes through the switch, errors and design.
"""

from __future__ import annotations

from .backend import BACKEND, P4ReduceProcessGroup, register
from .completion import P4ReduceWork
from .errors import CollectiveTimeout, P4ReduceError
from .hook import HookState, allreduce_hook
from .options import P4ReduceOptions
from .stats import stats

__all__ = [
    "BACKEND",
    "CollectiveTimeout",
    "HookState",
    "P4ReduceError",
    "P4ReduceOptions",
    "P4ReduceProcessGroup",
    "P4ReduceWork",
    "allreduce_hook",
    "register",
    "stats",
]

register()
