# trainbench: the entry points. Each creates the virtual environment on first use and
# installs what it needs (again when pyproject.toml changes): see the install levels below.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
WORKLOAD ?= resnet50-cpu
PROFILE ?=
ARGS ?=
UI_PORT ?= 5000
# The results UI listens on loopback only; UI_HOST=0.0.0.0 exposes it on purpose.
UI_HOST ?= 127.0.0.1
# MLflow 3's server also starts seven job consumers (GenAI scorers, trace roll-ups) that the results UI
# never uses: measured on 2 vCPUs, they kept both CPUs busy for about 25 s after the UI answered (about
# 50 CPU-seconds), enough to disturb a benchmark running beside the UI. `make ui` leaves them off;
# MLFLOW_SERVER_ENABLE_JOB_EXECUTION=true turns them back on.
MLFLOW_SERVER_ENABLE_JOB_EXECUTION ?= false
# Containers (issue 3): RUNTIME=docker runs the rank inside the workload's image;
# IMAGES (default: all), BASE_IMAGE and CA_BUNDLE are passed to `trainbench images build`.
RUNTIME ?= local
IMAGES ?=
BASE_IMAGE ?=
CA_BUNDLE ?=
MLFLOW_TRACKING_URI ?= sqlite:///$(CURDIR)/mlflow.db
export MLFLOW_TRACKING_URI

BIN := $(VENV)/bin
, := ,

# Install levels: each target installs only what it needs into $(VENV), and a later target
# adds the rest (torch is installed once). core: `make validate` (no torch, TensorFlow or MLflow);
# report: + matplotlib, MLflow; run: the main job (+ torch, torchvision, the Docker SDK);
# dev: `make test`/`make lint` (+ TensorFlow, mlperf-logging, pytest, ruff, mypy...).
# A level's stamp also marks the levels below it as installed. Each install prints its time.
STAMP_CORE := $(VENV)/.trainbench-core
STAMP_REPORT := $(VENV)/.trainbench-report
STAMP_RUN := $(VENV)/.trainbench-run
STAMP_DEV := $(VENV)/.trainbench-dev
STAMP_DALI := $(VENV)/.trainbench-dali
STAMP := $(STAMP_DEV)
REPORT_SPEC := .[plots,tracking]

# $(call install,SPEC,STAMPS,WHAT): install -e SPEC into $(VENV), touch STAMPS, print the time.
# The installer is uv (containers/tools.lock, installed by pip with its hashes): it downloads and
# unpacks in parallel, several times faster than pip. It reads SSL_CERT_FILE and UV_* settings, not
# pip's: PIP_INDEX_URL is passed on, and PIP_CERT when SSL_CERT_FILE is unset.
# --compile-bytecode writes the packages' .pyc files once, at install, as the images do: where
# PYTHONDONTWRITEBYTECODE is set (this project's machines set it) nothing caches them later, and
# every process compiled torch, torchvision and MLflow again: a tiny tracked run took 17.4 s (19 CPU-s)
# and 7.8 s (9.6 CPU-s) with them compiled (2-vCPU Xeon, 2026-11-26). Without the variable it moves
# the first run's compile into the set-up.
define install
@start=$$(date +%s); set -e; \
	if [ ! -x $(BIN)/python ]; then $(PYTHON) -m venv $(VENV); fi; \
	if [ ! -x $(BIN)/uv ]; then \
		$(BIN)/python -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps \
			-r containers/tools.lock; \
	fi; \
	$(if $(PIP_CERT),SSL_CERT_FILE="$${SSL_CERT_FILE:-$(PIP_CERT)}") $(BIN)/uv pip install --quiet --compile-bytecode \
		--python $(BIN)/python $(if $(PIP_INDEX_URL),--index-url '$(PIP_INDEX_URL)') -e '$(1)'; \
	touch $(2); \
	echo "set-up: $(3) ('$(1)') installed into $(VENV) in $$(( $$(date +%s) - start )) s"
endef

$(STAMP_CORE): pyproject.toml
	$(call install,.,$(STAMP_CORE),the core for validation)

$(STAMP_REPORT): pyproject.toml
	$(call install,$(REPORT_SPEC),$(STAMP_CORE) $(STAMP_REPORT),the report tools)

$(STAMP_RUN): pyproject.toml
	$(call install,.[run],$(STAMP_CORE) $(STAMP_REPORT) $(STAMP_RUN),the main job)

$(STAMP_DEV): pyproject.toml
	$(call install,.[dev],$(STAMP_CORE) $(STAMP_REPORT) $(STAMP_RUN) $(STAMP_DEV),the tests and tools)

$(STAMP_DALI): pyproject.toml $(STAMP_DEV)
	$(call install,.[dev$(,)dali],$(STAMP_DALI),NVIDIA DALI for input_pipeline=dali and its tests)

venv: $(STAMP_DEV)

# NVIDIA DALI (about 720 MB installed): input_pipeline=dali's CPU backend runs here, so CI tests it;
# `make test` alone skips those tests, saying why.
venv-dali: $(STAMP_DALI)

run: $(STAMP_RUN)
	$(BIN)/trainbench run $(WORKLOAD) $(if $(PROFILE),--profile $(PROFILE)) --runtime $(RUNTIME) $(ARGS)

images: $(STAMP_RUN)
	$(BIN)/trainbench images build $(if $(BASE_IMAGE),--base-image $(BASE_IMAGE)) \
		$(if $(CA_BUNDLE),--ca-bundle $(CA_BUNDLE)) $(IMAGES)

base-image: $(STAMP_RUN)
	$(BIN)/trainbench images base

lock: $(STAMP)
	$(BIN)/trainbench images lock

test: $(STAMP)
	$(BIN)/python -m pytest $(ARGS)

ui: $(STAMP_REPORT)
	env MLFLOW_SERVER_ENABLE_JOB_EXECUTION=$(MLFLOW_SERVER_ENABLE_JOB_EXECUTION) $(BIN)/mlflow ui --backend-store-uri $(MLFLOW_TRACKING_URI) --host $(UI_HOST) --port $(UI_PORT)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP_RUN)
	$(BIN)/trainbench bench $(ARGS)

# Issues 34 and 37: every GPU figure in one command and one table, within 8 minutes on one H100
# (suite/bench/gpu_check.py). On a GPU host without the project's venv (no registry), carry the
# wheels `make gpu-wheels` downloads here and run: GPU_PYTHON=python3 make gpu-check (see the README).
GPU_PYTHON ?= $(if $(wildcard $(BIN)/python),$(BIN)/python,python3)
.PHONY: gpu-check gpu-wheels
gpu-check:
	$(GPU_PYTHON) -m suite gpu-check $(ARGS)

# The core's wheels for Python 3.12 that a GPU host with torch, torchvision and nvidia-ml-py lacks (about 3.5 MB),
# at the versions this venv runs, into .whl/ (ignored by git; the device tool carries it)
GPU_WHEELS := pydantic pydantic-core annotated-types typing-inspection jsonschema jsonschema-specifications \
	referencing rpds-py
gpu-wheels: $(STAMP_CORE)
	$(BIN)/python -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
		--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl \
		$$($(BIN)/python -c "import importlib.metadata as m; print(' '.join(f'{n}=={m.version(n)}' for n in '$(GPU_WHEELS)'.split()))")

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
validate: $(STAMP_CORE)
	$(BIN)/trainbench validate submissions --json results/validation/findings.json \
		--markdown results/validation/findings.md $(VALIDATE_ARGS)

report: $(STAMP_REPORT)
	$(BIN)/trainbench report submissions --output-dir results/report $(ARGS)

schema: $(STAMP_CORE)
	$(BIN)/trainbench schema --write

clean:
	rm -rf results mlartifacts mlflow.db .pytest_cache .mypy_cache .ruff_cache

# Issue 16: a real Slurm cluster in containers (a controller and SLURM_NODES compute nodes running the
# workload image, munge auth), submitted to from this host (needs: apt-get install slurm-client munge).
# SLURM_SHARED is mounted at the same path on every node: the runs' output directory must be under it.
.PHONY: slurm-image slurm-up slurm-down slurm-status
SLURM_NODES ?= 2
SLURM_SHARED ?= $(CURDIR)/results
slurm-image: $(STAMP_RUN)
	$(BIN)/trainbench slurm image

slurm-up: $(STAMP_RUN)
	$(BIN)/trainbench slurm up --nodes $(SLURM_NODES) $(foreach d,$(SLURM_SHARED),--shared $(d))

slurm-down: $(STAMP_RUN)
	$(BIN)/trainbench slurm down

slurm-status: $(STAMP_RUN)
	$(BIN)/trainbench slurm status
