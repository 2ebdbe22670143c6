# trainbench: the entry points. `make run` and `make test` create the virtual
# environment on first use (and again when pyproject.toml changes).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
WORKLOAD ?= resnet50-cpu
PROFILE ?=
ARGS ?=
UI_PORT ?= 5000
# The results UI listens on loopback only; UI_HOST=0.0.0.0 exposes it on purpose.
UI_HOST ?= 127.0.0.1
# Containers (issue 3): RUNTIME=docker runs the rank inside the workload's image;
# IMAGES (default: all), BASE_IMAGE and CA_BUNDLE are passed to `trainbench images build`.
RUNTIME ?= local
IMAGES ?=
BASE_IMAGE ?=
CA_BUNDLE ?=
MLFLOW_TRACKING_URI ?= sqlite:///$(CURDIR)/mlflow.db
export MLFLOW_TRACKING_URI

BIN := $(VENV)/bin
STAMP := $(VENV)/.trainbench-installed

.PHONY: run test ui lint bench venv clean schema images base-image lock

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(BIN)/trainbench run $(WORKLOAD) $(if $(PROFILE),--profile $(PROFILE)) --runtime $(RUNTIME) $(ARGS)

images: $(STAMP)
	$(BIN)/trainbench images build $(if $(BASE_IMAGE),--base-image $(BASE_IMAGE)) \
		$(if $(CA_BUNDLE),--ca-bundle $(CA_BUNDLE)) $(IMAGES)

base-image: $(STAMP)
	$(BIN)/trainbench images base

lock: $(STAMP)
	$(BIN)/trainbench images lock

test: $(STAMP)
	$(BIN)/python -m pytest $(ARGS)

ui: $(STAMP)
	$(BIN)/mlflow ui --backend-store-uri $(MLFLOW_TRACKING_URI) --host $(UI_HOST) --port $(UI_PORT)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/trainbench bench $(ARGS)

# Issue 5: input-bound training with 0/1/2 loader workers, and preprocessing offloaded to a
# tf.data service worker on another core vs done on the trainer's core (printed figures).
.PHONY: bench-mnist
bench-mnist: $(STAMP)
	$(BIN)/trainbench bench-mnist $(ARGS)

# Submissions (issue 4). `validate` checks the committed tree (exit 1 on error findings)
# and writes JSON + Markdown reports for CI; `report` ranks systems by samples/s and
# samples per dollar (rich table, Markdown, PNG chart, MLflow run).
.PHONY: validate report
VALIDATE_ARGS ?=
validate: $(STAMP)
	$(BIN)/trainbench validate submissions --json results/validation/report.json \
		--markdown results/validation/report.md $(VALIDATE_ARGS)

report: $(STAMP)
	$(BIN)/trainbench report submissions --output-dir results/report $(ARGS)

schema: $(STAMP)
	$(BIN)/trainbench schema --write

clean:
	rm -rf results mlartifacts mlflow.db .pytest_cache .mypy_cache .ruff_cache

# Issue 16: a real Slurm cluster in containers (a controller and SLURM_NODES compute nodes running the
# workload image, munge auth), submitted to from this host (needs: apt-get install slurm-client munge).
# SLURM_SHARED is mounted at the same path on every node: the runs' output directory must be under it.
.PHONY: slurm-image slurm-up slurm-down slurm-status
SLURM_NODES ?= 2
SLURM_SHARED ?= $(CURDIR)/results
slurm-image: $(STAMP)
	$(BIN)/trainbench slurm image

slurm-up: $(STAMP)
	$(BIN)/trainbench slurm up --nodes $(SLURM_NODES) $(foreach d,$(SLURM_SHARED),--shared $(d))

slurm-down: $(STAMP)
	$(BIN)/trainbench slurm down

slurm-status: $(STAMP)
	$(BIN)/trainbench slurm status
