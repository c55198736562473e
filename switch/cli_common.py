"""Pieces the p4reduce-* command lines share."""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn


class OneLineArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line, ``PROG: error: message``, and ``exit_status``."""

    def __init__(self, *args: Any, exit_status: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.exit_status = exit_status

    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(self.exit_status)
