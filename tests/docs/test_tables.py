"""Option tables of the documentation against the code they describe: a field added to
``P4ReduceOptions`` without its row in docs/torch.md (as ``threads`` and ``engine`` once
were) fails here, and so does a row for a field that is gone."""

from __future__ import annotations

import dataclasses
import re

from docrunner import ROOT
from p4reduce.host.torch import P4ReduceOptions


def _table_after(text: str, heading: str) -> list[str]:
    """The first-column names (`` `a`, `b` ``) of the first table after ``heading``."""
    rest = text[text.index(heading) :]
    rows = re.findall(r"^\|([^|\n]*)\|", rest[rest.index("\n|") :], re.M)
    names: list[str] = []
    for cell in rows:
        if set(cell.strip()) <= {"-", ":", " "} or cell.strip() in ("option", "field"):
            continue
        if not cell.strip().startswith("`"):
            break  # the table ended
        names += re.findall(r"`(\w+)`", cell)
    return names


def test_the_p4reduce_options_table_lists_every_field() -> None:
    text = (ROOT / "docs" / "torch.md").read_text()
    rows = _table_after(text, "### `P4ReduceOptions`")
    fields = [f.name for f in dataclasses.fields(P4ReduceOptions)]
    assert sorted(rows) == sorted(fields), (
        f"docs/torch.md's P4ReduceOptions table: missing {sorted(set(fields) - set(rows))}, "
        f"stale {sorted(set(rows) - set(fields))}"
    )
