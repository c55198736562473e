"""The compiled part of p4reduce; everything else is declared in pyproject.toml.

host/_engine/*.c is the protocol core of one call in C and its driver loop
(host/protocol/native.py; host/_engine/engine.h says which file does what).
switch/native/_batch.c is the native switch engine's in-process packet path (engine.py).
host/_quantize_c.c is a fused quantize/dequantize kernel, bit-identical to the numpy code
in host/quantize.py, which falls back to that code when the module is missing. Its
floating-point operations must stay exactly numpy's: FMA contraction off (no fused
multiply-add where numpy rounds twice) and never -ffast-math. dequantize may write its
float32 results over its int32 input, so no strict-aliasing assumptions either.
"""

import sys
from pathlib import Path

from setuptools import Extension, setup

# Generate p4src/include/constants.p4 and host/_engine/contracts.h from the one source of the
# values P4, Python and C share (p4reduce/contracts/spec.py) before anything is compiled; only
# stale files are written, so an up-to-date tree rebuilds nothing.
ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from p4reduce.contracts import generate  # noqa: E402  (the tree's own copy, before install)

del sys.path[0]
for _rel in generate.write(ROOT):
    print(f"setup.py: regenerated {_rel} from p4reduce/contracts/spec.py")

FLAGS = ["-O3", "-ffp-contract=off", "-fno-strict-aliasing"]
# the native engine's files (host/_engine/engine.h): one extension module
ENGINE_FILES = ("machine", "lanes", "driver", "threads", "module")

setup(
    ext_modules=[
        Extension(
            "p4reduce.host._quantize_c",
            ["host/_quantize_c.c"],
            depends=["host/_engine/contracts.h", "host/_simd.h"],
            extra_compile_args=FLAGS,
        ),
        # the native protocol core (host/protocol/native.py): it quantizes as quantize_row
        # does, so the same floating-point rules apply; its driver runs pthreads
        Extension(
            "p4reduce.host._engine_c",
            [f"host/_engine/{f}.c" for f in ENGINE_FILES],
            depends=[
                "host/_engine/engine.h",
                "host/_engine/contracts.h",
                "host/_engine/udpio.h",
                "host/_simd.h",
            ],
            extra_compile_args=[*FLAGS, "-pthread"],
            extra_link_args=["-pthread"],
        ),
        # the in-process packet path of the native switch engine (switch/native/engine.py):
        # no floating point, so plain -O2
        Extension(
            "p4reduce.switch.native._batch", ["switch/native/_batch.c"], extra_compile_args=["-O2"]
        ),
    ]
)
