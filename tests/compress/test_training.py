"""Training on scikit-learn's digits images with 4 workers over the embedded switch
(examples/train_digits.py): dense DDP on the p4reduce backend against block top-k with
error feedback, without it, and with the adaptive ratio, in one process group, from the
same initial weights and data order."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("sklearn", reason="scikit-learn (the dev extra) ships the digits data")

SCRIPT = Path(__file__).parents[2] / "examples" / "train_digits.py"
RATIO = 0.02


def train(*args: str, timeout: float) -> dict[str, dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--json", "--timeout", str(timeout - 30), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stderr[-4000:]}"
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return {r["scheme"]: r for r in rows}


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, Any]]:
    # 8 epochs (88 steps), not the example's 15: the same relations hold with margin
    # (docs/compression.md: accuracy 93.3 % dense, 95.0 % top-k, 89.2 % without error
    # feedback, 95.0 % adaptive) in about half the training time
    return train(
        "--workers", "4", "--compress", "none,topk,topk-noef,adaptive",
        "--ratio", str(RATIO), "--mode", "sparse", "--epochs", "8",
        # the adaptive ratio follows the kept energy alone: its growth is not stopped by a
        # collective that looks slow on a loaded machine, so "it moved" does not depend on timing
        "--time-budget", "inf", timeout=840,
    )  # fmt: skip


@pytest.mark.timeout(900)
def test_topk_with_error_feedback_matches_dense_with_5x_fewer_packets(runs: dict) -> None:
    dense, topk = runs["none"], runs["topk"]
    print(f"[figure] {json.dumps(runs)}")
    assert dense["accuracy"] > 0.9, dense  # the baseline learned the task
    assert topk["steps"] == dense["steps"]
    assert topk["accuracy"] >= dense["accuracy"] - 0.01, (topk, dense)
    assert topk["packets_per_step"] * 5 <= dense["packets_per_step"], (topk, dense)
    assert topk["paths"] == {"dense": 5, "sparse": topk["steps"] - 5}


@pytest.mark.timeout(900)
def test_without_error_feedback_it_is_visibly_worse(runs: dict) -> None:
    dense, topk, noef = runs["none"], runs["topk"], runs["topk-noef"]
    assert noef["accuracy"] <= dense["accuracy"] - 0.03, (noef, dense)
    assert noef["accuracy"] <= topk["accuracy"] - 0.03, (noef, topk)


@pytest.mark.timeout(900)
def test_the_adaptive_ratio_reaches_the_same_accuracy(runs: dict) -> None:
    dense, adaptive = runs["none"], runs["adaptive"]
    assert adaptive["accuracy"] >= dense["accuracy"] - 0.01, (adaptive, dense)
    assert adaptive["packets_per_step"] < dense["packets_per_step"], (adaptive, dense)
    assert adaptive["ratio"] != RATIO  # it moved


@pytest.mark.timeout(600)
def test_agreed_selection_auto_mode_and_dense_edges_train() -> None:
    """Two workers, a deeper MLP, agreed selection, the first and last layers sent whole,
    the cost model choosing the collective: every path is measured (the allgather over
    gloo included) and the model learns as the dense run beside it does."""
    runs = train(
        "--workers", "2", "--compress", "none,topk", "--selection", "agreed",
        "--mode", "auto", "--dense-edges", "--depth", "2", "--epochs", "2",
        "--warmup-steps", "2", "--ratio", "0.05", timeout=540,
    )  # fmt: skip
    dense, topk = runs["none"], runs["topk"]
    print(f"[figure] {json.dumps(runs)}")
    assert set(topk["paths"]) == {"dense", "sparse", "allgather"}, topk
    assert topk["accuracy"] > 0.2, topk  # above chance (0.1) after 2 epochs
    # not worse than dense (after 44 steps both are far from trained and far apart: with
    # the virtual iterate top-k was ahead, 46.7 % against 34.4 %)
    assert topk["accuracy"] >= dense["accuracy"] - 0.05, (topk, dense)
