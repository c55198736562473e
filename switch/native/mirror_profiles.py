"""Action profiles and selectors of a native switch: the Python object, its state in C.

The interpreter's ``ActionProfile`` stays the control plane (validation, errors, the
``in_use`` checks); for a native switch it gets an ``EngineProfileStore``, whose
``members`` and ``groups`` dicts push the whole profile into the engine after every change,
whoever makes it: ``add_member``/``set_group``/... of the Python API and the STF runner, and
the P4Runtime server, which writes ``profile.members[mid] = ...`` itself (entity_profiles.py,
pipeline_config.py). The engine builds the new profile aside and swaps it in under its
mutex (runtime/p4r_profiles.c), so packets of the native I/O loop, which run without the
GIL, see each change whole.

Table entries name a member or a group by its control-plane id, resolved per packet, so a
member's change reloads no table; the order in which the control plane works (a member
before the entry that uses it, the entry gone before its member) keeps every reference
valid, and an entry whose member or group is missing all the same makes the table miss.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ..interp.externs import ActionProfile, ExternError, ProfileStore

U32, U64 = ctypes.c_uint32, ctypes.c_uint64
_ID_LIMIT = 1 << 64
REF_MEMBER, REF_GROUP = 1, 2


def bind(lib: ctypes.CDLL) -> None:
    p64 = ctypes.POINTER(U64)
    lib.p4r_profile_load.argtypes = [ctypes.c_void_p, U32, U32, p64, U32, p64]
    lib.p4r_profile_load.restype = ctypes.c_int


class _Synced(dict):  # type: ignore[type-arg]
    """A dict that calls ``sync`` after every change (members or groups of a profile)."""

    def __init__(self, data: dict[Any, Any], sync: Any, what: str) -> None:
        self._sync, self._what = sync, what
        for k in data:
            self._check(k)
        super().__init__(data)

    def _check(self, key: Any) -> None:
        if not (isinstance(key, int) and 0 <= key < _ID_LIMIT):
            # the engine keys members and groups by a 64-bit id (P4Runtime's are 32-bit)
            raise ExternError(f"{self._what} id {key!r} is not in [0, 2^64)")

    def __setitem__(self, key: Any, value: Any) -> None:
        self._check(key)
        super().__setitem__(key, value)
        self._sync()

    def __delitem__(self, key: Any) -> None:
        super().__delitem__(key)
        self._sync()

    def pop(self, *args: Any) -> Any:
        v = super().pop(*args)
        self._sync()
        return v

    def popitem(self) -> Any:
        v = super().popitem()
        self._sync()
        return v

    def clear(self) -> None:
        super().clear()
        self._sync()

    def update(self, *args: Any, **kw: Any) -> None:
        new = dict(*args, **kw)
        for k in new:
            self._check(k)
        for k, v in new.items():
            dict.__setitem__(self, k, v)
        self._sync()

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]


class EngineProfileStore(ProfileStore):
    """An action profile's members and groups in dicts that push the whole profile into the
    engine after every change."""

    def __init__(self, prof: ActionProfile, sw: Any, index: int) -> None:
        self.prof, self.sw, self.index = prof, sw, index  # (profile, switch, C index)
        self.members: dict[int, Any] = {}
        self.groups: dict[int, list[int]] = {}
        self._loaded = False  # no push before both dicts are in

    def set_members(self, members: dict[int, Any]) -> None:
        self.members = _Synced(members, self._sync, f"{self.prof.name}: member")
        self._sync()

    def set_groups(self, groups: dict[int, list[int]]) -> None:
        self.groups = _Synced(groups, self._sync, f"{self.prof.name}: group")
        self._sync()

    def load(self, members: dict[int, Any], groups: dict[int, list[int]]) -> None:
        self.members = _Synced(members, self._sync, f"{self.prof.name}: member")
        self.groups = _Synced(groups, self._sync, f"{self.prof.name}: group")
        self._loaded = True
        self._sync()

    def _sync(self) -> None:
        if self._loaded:
            self.sw.push_profile(self.index, self.prof)


def attach_profile(prof: ActionProfile, sw: Any, k: int) -> None:
    """Keep ``prof``'s members and groups in switch ``sw`` (C index k) and push them."""
    prof.use_store(EngineProfileStore(prof, sw, k))


def detach_profile(prof: ActionProfile) -> None:
    """The switch closes: the profile keeps its state in plain dicts again."""
    if isinstance(prof.store, EngineProfileStore):
        prof.use_store(ProfileStore())


def profile_words(
    prof: ActionProfile, action_ids: dict[str, int], nargs: int
) -> tuple[int, list[int], int, list[int]]:
    """The flat arrays of p4r_profile_load: members (id, action, args...) and groups
    (id, size, member ids...), both by ascending id."""
    mflat: list[int] = []
    for mid in sorted(prof.members):
        m = prof.members[mid]
        mflat += [mid, action_ids[m.action], *m.args, *[0] * (nargs - len(m.args))]
    gflat: list[int] = []
    for gid in sorted(prof.groups):
        ms = prof.groups[gid]
        gflat += [gid, len(ms), *ms]
    return len(prof.members), mflat, len(prof.groups), gflat


def entry_ref(e: Any) -> tuple[int, int] | None:
    """(REF_MEMBER or REF_GROUP, id) for an entry that points into a profile (no action of
    its own: ``Table.apply`` then resolves it), else None. A group wins, as in ``resolve``."""
    if e.fn is not None:
        return None
    if e.group is not None:
        return REF_GROUP, e.group
    if e.member is not None:
        return REF_MEMBER, e.member
    return None
