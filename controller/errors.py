"""The controller's one exception type, with kinds the CLI and the service map to exit codes and
HTTP statuses. Every message is one line that says what went wrong and, where it helps, what to
do about it."""

from __future__ import annotations


class ControllerError(Exception):
    """A failure the user can act on; ``str(err)`` is one line. ``status`` is the HTTP status the
    registration service answers with."""

    status = 500

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))

    @property
    def message(self) -> str:
        return str(self)


class InvalidArgument(ControllerError):
    """A malformed request: a bad address, rank, slot count, job id, probability."""

    status = 400


class NotFound(ControllerError):
    """An unknown job (or rank within one)."""

    status = 404


class Conflict(ControllerError):
    """The request collides with existing state: a job id in use, overlapping slots, a rank
    that joined twice, a worker count that differs from the other workers'."""

    status = 409


class NoPipeline(ControllerError):
    """The switch runs no pipeline (``p4reduce-ctl push`` first)."""

    status = 503


class SwitchError(ControllerError):
    """The switch is unreachable, refused a request, or the controller is not its primary."""

    status = 502


class Timeout(ControllerError):
    """A join or barrier did not complete in time."""

    status = 504


class Unsupported(ControllerError):
    """The switch cannot do what was asked (simple_switch_grpc has no RegisterEntry)."""

    status = 501


class Unauthenticated(ControllerError):
    """A request without the credential it needs (docs/controller.md, "Credentials")."""

    status = 401


class Forbidden(ControllerError):
    """A credential that does not grant the request: another job's secret, a wrong token."""

    status = 403


class TooLarge(ControllerError):
    """A request body over the service's limit (docs/controller.md, "Limits")."""

    status = 413


class TooManyWaiting(ControllerError):
    """One client already has as many joins, barriers and recoveries waiting as it may."""

    status = 429


class TooManyJobs(ControllerError):
    """The service already tracks as many jobs as it may (joining, installing or ready)."""

    status = 507


class Busy(ControllerError):
    """The service has as many connections open as it serves at once; try again."""

    status = 503
