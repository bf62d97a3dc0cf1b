# The two quick-start commands: `make train` (PPO on CartPole, locally) and `make test`.
# Both create .venv on first use; torch is pinned to the local CPU build (2.13.0).
PY := .venv/bin/python
STAMP := .venv/.installed

.PHONY: train test test-fast test-scripts test-scripts-short chaos lint bench clean

$(STAMP): pyproject.toml
	python3 -m venv .venv
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[test]"
	touch $(STAMP)

train: $(STAMP)
	.venv/bin/flywheel train --algo PPO --env CartPole-v1 --stop-reward 475 --checkpoint-dir runs/cartpole

# The full suite, learning tests included: about 45 minutes on 2 cores (44.5 min for 3,420 tests at load 1 to 14, 2026-12-08).
test: $(STAMP)
	$(PY) -m pytest

# Everything but the `learning`-marked tests (which train to a return within a step budget).
test-fast: $(STAMP)
	$(PY) -m pytest -m "not learning and not example_scripts"

# Every new-stack example script of the installed RLlib wheel, ported and run for two iterations
# (one at a time, each in its own process; about an hour on 2 cores). Not part of `make test`.
test-scripts: $(STAMP)
	$(PY) -m pytest -m example_scripts tests/porting/test_example_scripts.py

# The short form CI runs: four representative scripts (a custom algorithm, single- and multi-agent
# connectors, a custom multi-agent env).
test-scripts-short: $(STAMP)
	$(PY) -m pytest -m example_scripts_short tests/porting/test_example_scripts.py

# The fuzz tests of tests/chaos with many random examples each (`make test` runs a short, repeatable
# version of them). Failing examples are kept in .hypothesis/ and replayed first by the next run.
# The offline fault tests kill 52 recorders instead of 7 and flip 300 bits instead of 30.
# The Tune fault tests train 24 iterations per trial instead of 6 (checkpoints every 4 instead of 2).
chaos: $(STAMP)
	FLYWHEEL_FUZZ=long $(PY) -m pytest -m chaos --timeout=0 tests/chaos

lint: $(STAMP)
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/basedpyright

bench:
	bash bench/run.sh

clean:
	rm -rf .venv runs build src/*.egg-info
