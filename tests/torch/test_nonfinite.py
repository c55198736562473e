"""NaN/±Inf through the p4reduce backend as gloo gives them (docs/torch.md): 2 ranks, an
Inf on one and a NaN on the other come back non-finite on both (whole blocks of K), for
float32, float16 and bfloat16; and an AMP GradScaler under DDP skips the step of the
overflowing iteration on every rank and lowers the scale identically, exactly as on gloo."""

from __future__ import annotations

from pathlib import Path

from ranks_harness import run, wait_gone

SCRIPT = Path(__file__).with_name("ranks_nonfinite.py")


def test_nonfinite_as_gloo_and_grad_scaler(tmp_path: Path) -> None:
    results = run("nonfinite", 2, tmp_path, timeout=150, script=SCRIPT)
    for r in results:
        assert r["backend"] == "p4reduce"
        for name, a in r["allreduce"].items():
            assert a["dtype"] == name and all(v for k, v in a.items() if k != "dtype"), a
        p4, gloo = r["scaler_p4reduce"], r["scaler_gloo"]
        # the overflowing step (2) is skipped and the scale halves, on every rank, as gloo
        assert p4["scales"] == gloo["scales"], (p4, gloo)
        assert p4["stepped"] == gloo["stepped"] == [True, True, False, True, True], (p4, gloo)
        assert p4["scales"][2] == p4["scales"][1] / 2
        assert all(p4["finite_params"]) and all(gloo["finite_params"])
    assert results[0]["scaler_p4reduce"] == results[1]["scaler_p4reduce"]
    assert wait_gone(results[0]["pids"], 60) == []
