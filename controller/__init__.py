"""The p4reduce controller: a library and the ``p4reduce-ctl`` command over P4Runtime
(docs/controller.md). It reaches the switch only through P4Runtime, so it drives
``p4reduce-switch`` and ``simple_switch_grpc`` alike.

- ``Controller`` (api.py): push, static config, jobs, counters, slot state, loss, reset.
- ``RegistrationService`` (service.py) and ``RegistrationClient`` (client.py): workers join a
  job, meet at barriers and leave over HTTP + JSON.
"""

from .api import Controller
from .client import Assignment, RegistrationClient, RegistrationError
from .errors import (
    Conflict,
    ControllerError,
    InvalidArgument,
    NoPipeline,
    NotFound,
    SwitchError,
    Timeout,
)
from .http_server import Limits, TlsConfig
from .jobs import Job, Member
from .registry import Registry
from .service import RegistrationService, Timeouts
from .static_config import Host, Route, StaticConfig

__all__ = [
    "Assignment",
    "Conflict",
    "Controller",
    "ControllerError",
    "Host",
    "InvalidArgument",
    "Job",
    "Limits",
    "Member",
    "NoPipeline",
    "NotFound",
    "RegistrationClient",
    "RegistrationError",
    "RegistrationService",
    "Registry",
    "Route",
    "StaticConfig",
    "SwitchError",
    "Timeout",
    "Timeouts",
    "TlsConfig",
]
