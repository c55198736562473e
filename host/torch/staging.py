"""Torch tensors as the numpy arrays ``AllreduceSession`` reduces in place.

A contiguous float32 or int32 CPU tensor is used as it is (its numpy view shares the
memory). Anything else the switch can carry (a CUDA tensor, a non-contiguous or negated
view, a float16 or bfloat16 tensor, float64 when opted in) is staged: copied into a
contiguous CPU tensor (float32 for the floating types) at submission, and the result
copied back (rounded to the tensor's dtype) when the calls are done.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

SWITCH_DTYPES = (torch.float32, torch.int32, torch.float16, torch.bfloat16)
# Carried as float32: every float16 and bfloat16 value is a float32, so the block
# exponents and the quantization are those of the tensor's own values; the result is
# rounded back once. float64 only when the options opt in (it loses precision).
WIDENED = (torch.float16, torch.bfloat16, torch.float64)
STAGED_DEVICES = ("cpu", "cuda")


def switchable(t: torch.Tensor, float64: bool = False) -> bool:
    """Whether the switch can reduce ``t``: a dense float32, float16, bfloat16 or int32
    tensor (float64 too with ``float64``) on the CPU or a CUDA device."""
    return (
        isinstance(t, torch.Tensor)
        and (t.dtype in SWITCH_DTYPES or (float64 and t.dtype == torch.float64))
        and t.layout == torch.strided
        and t.device.type in STAGED_DEVICES
    )


@dataclass
class Staged:
    """A caller's tensor and the contiguous CPU tensor the session works on."""

    tensor: torch.Tensor
    host: torch.Tensor
    copied: bool  # host is a copy, to be written back by finish()

    @classmethod
    def of(cls, tensor: torch.Tensor) -> Staged:
        t = tensor.detach()
        widen = t.dtype in WIDENED
        if t.device.type == "cpu" and t.is_contiguous() and not t.is_neg() and not widen:
            return cls(tensor, t, copied=False)
        # A device-to-host copy waits for the work queued on the tensor's stream, so the
        # gradient is complete when it is read.
        dtype = torch.float32 if widen else t.dtype
        host = t.to(
            "cpu", dtype=dtype, memory_format=torch.contiguous_format, copy=True
        ).resolve_neg()
        return cls(tensor, host, copied=True)

    def flat(self) -> np.ndarray:
        """The host tensor as a flat numpy view (sharing its memory)."""
        return self.host.numpy().reshape(-1)

    def chunks(self, size: int) -> list[np.ndarray]:
        """Views of at most ``size`` elements covering the tensor, in order."""
        flat = self.flat()
        return [flat[i : i + size] for i in range(0, flat.size, size)]

    def finish(self) -> None:
        """Copy the result back into the caller's tensor when it was staged."""
        if not self.copied:
            return
        out = self.tensor.detach()
        out.copy_(self.host)
        if out.device.type == "cuda":
            # The copy is queued on this thread's stream of the device; whoever waits on
            # the collective next must see it done.
            torch.cuda.current_stream(out.device).synchronize()
