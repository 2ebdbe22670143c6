# trainbench: the entry points. `make run` and `make test` create the virtual
# environment on first use (and again when pyproject.toml changes).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
WORKLOAD ?= resnet50-cpu
PROFILE ?=
ARGS ?=
UI_PORT ?= 5000
MLFLOW_TRACKING_URI ?= sqlite:///$(CURDIR)/mlflow.db
export MLFLOW_TRACKING_URI

BIN := $(VENV)/bin
STAMP := $(VENV)/.trainbench-installed

.PHONY: run test ui lint bench venv clean schema

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(BIN)/trainbench run $(WORKLOAD) $(if $(PROFILE),--profile $(PROFILE)) $(ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest $(ARGS)

ui: $(STAMP)
	$(BIN)/mlflow ui --backend-store-uri $(MLFLOW_TRACKING_URI) --host 127.0.0.1 --port $(UI_PORT)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/trainbench bench $(ARGS)

schema: $(STAMP)
	$(BIN)/trainbench schema --write

clean:
	rm -rf results mlartifacts mlflow.db .pytest_cache .mypy_cache .ruff_cache
