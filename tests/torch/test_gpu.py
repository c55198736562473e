"""CUDA tensors go through the switch staged in host memory (a GPU machine only)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from ranks_harness import run, wait_gone


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device (torch.cuda.is_available() is False)"
)
def test_cuda_tensors(tmp_path: Path) -> None:
    results = run("cuda", 2, tmp_path, timeout=120)
    for r in results:
        c = r["cuda"]
        assert c["ok"] and c["int32"], c
        assert c["half"] == {"torch.float16": True, "torch.bfloat16": True}, c
        assert c["ddp_calls"] >= 3  # float32, int32 and at least one DDP bucket
    assert wait_gone([p for r in results for p in r["pids"]], 10) == []
