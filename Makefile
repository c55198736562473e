# p4reduce developer entry points. Everything installs into .venv; each target installs what it needs.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
P4C    := $(shell command -v p4c 2>/dev/null)
P4SRC  := $(wildcard p4src/*.p4)

.PHONY: install build test lint bench clean demo testbed

install: $(STAMP)

# Re-run only when the package metadata, the compiled kernel or the contracts' spec changes (setup.py
# regenerates constants.p4 and contracts.h from it); `make install` is idempotent.
$(STAMP): pyproject.toml setup.py p4reduce/contracts/spec.py host/_quantize_c.c host/_simd.h $(wildcard host/_engine/*.c host/_engine/*.h)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

# Compile every complete program in p4src/ into build/: with p4c when it is on PATH,
# otherwise with the embedded front end (same output names as p4c's BMv2 back end).
build: install
	@mkdir -p build
	@for p in $(P4SRC); do \
	  n=$$(basename $$p .p4); \
	  if [ -n "$(P4C)" ]; then \
	    echo "p4c $$p"; p4c --target bmv2 --arch v1model -I p4src/include -o build --p4runtime-files build/$$n.p4info.txtpb $$p || exit 1; \
	  else \
	    echo "p4reduce-p4c $$p"; $(VENV)/bin/p4reduce-p4c -I p4src/include -o build --p4runtime-files build/$$n.p4info.txtpb $$p || exit 1; \
	  fi; \
	done

# The suite as two pytest runs side by side, one per core (tests/run_suite.py); `pytest`
# alone runs it in one process. ARGS goes to both runs: make test ARGS="-x".
test: install
	$(PY) tests/run_suite.py $(ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: install
	$(PY) bench/frontend.py
	$(PY) bench/interpreter.py
	$(PY) bench/switch.py
	$(PY) bench/dataplane.py
	$(PY) bench/allreduce.py
	$(PY) bench/torch_ddp.py

# DDP training with 4 worker processes through the embedded switch, checked against gloo
# (docs/demo.md). ARGS passes options: make demo ARGS="--steps 60 --json".
demo: install
	$(VENV)/bin/p4reduce demo $(ARGS)

# The Mininet experiments (scaling, loss, sparsity, DDP training) on the embedded switch;
# needs root. Tables on stdout, CSV and PNG in testbed/out/ (docs/testbed.md, docs/results.md).
# ARGS passes options: make testbed ARGS="--switch bmv2 --repeat 5".
testbed: install
	$(VENV)/bin/p4reduce testbed --experiment standard $(ARGS)

clean:
	rm -rf build .pytest_cache
