# mlgraph: every target creates the virtual environment first if it is missing.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OUT    ?= outputs
PORT   ?= 5000
ARGS   ?=

.PHONY: install test test-fast lint docs docs-clean run ui bench sweep-reliance sweep-hparams compare report fs-sweep clean \
        slurm-up slurm-down server-up server-down test-cluster \
        test-ui test-wheel

$(STAMP): pyproject.toml
	@echo "Installing mlgraph with its test tools into $(VENV) (once; about 1.5 min on 2 cores)..."
	@start=$$(date +%s); \
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); \
	$(BIN)/python -m pip install --quiet --upgrade pip && \
	$(BIN)/python -m pip install --quiet -e '.[test]' && \
	echo "Installed in $$(( $$(date +%s) - start )) s: $$($(BIN)/python -m pip list 2>/dev/null | tail -n +3 | wc -l) packages."
	@touch $(STAMP)

install: $(STAMP)  ## create .venv and install mlgraph with its test tools

test: $(STAMP)  ## the whole suite: unit, integration, wheel, UI (headless Chromium) and cluster tests (starts SLURM and PostgreSQL; root)
	MLGRAPH_CLUSTER_TESTS=1 $(BIN)/python -m pytest

test-fast: $(STAMP)  ## the contributor's loop (~3–4 min): maths, readers, configs, and one real command on a shipped dataset
	$(BIN)/python -m pytest -m "(not integration and not ui and not cluster) or quick"

test-wheel: $(STAMP)  ## build the wheel, install it in a fresh venv, run `mlgraph` outside the checkout
	$(BIN)/python -m pytest tests/package

test-ui: $(STAMP)  ## the README's MLflow UI path in headless Chromium (installs Debian's chromium if missing)
	scripts/install-chromium.sh
	$(BIN)/python -m pytest -m ui tests/ui

lint: $(STAMP)  ## ruff (lint and format check) and import-linter (each layer imports only the layers below it)
	$(BIN)/ruff check src tests benchmarks docs
	$(BIN)/ruff format --check src tests benchmarks docs
	$(BIN)/lint-imports

DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): pyproject.toml $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)  ## the documentation site in docs/_build/html, strict (a warning or broken link fails it); runs the example gallery
	$(BIN)/sphinx-build -b html -W --keep-going -q docs docs/_build/html
	@echo "open docs/_build/html/index.html"

docs-clean:  ## remove the built site, the generated API pages and the gallery's outputs
	rm -rf docs/_build docs/auto_examples docs/api/generated docs/sg_execution_times.rst

run: $(STAMP)  ## the main job: ML-MRRW on yeast under paper 000's protocol
	$(BIN)/python -m run method=mlmrrw dataset=yeast $(ARGS)

ui: $(STAMP)  ## MLflow UI on the local store
	@echo "Runs of an experiment: http://127.0.0.1:$(PORT)/#/experiments/<id>/runs?workflowType=machine_learning"
	@echo "(without ?workflowType=machine_learning MLflow 3 opens its GenAI view; or click 'Model training')"
	$(BIN)/mlflow ui --backend-store-uri sqlite:///$(abspath $(OUT))/mlflow.db --host 127.0.0.1 --port $(PORT)

bench: $(STAMP)  ## speed and overhead ratios, measured in one run (adds the reference libraries)
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	$(BIN)/python benchmarks/bench.py $(ARGS)

sweep-reliance: $(STAMP)  ## reliance-weight grid (ν1, ν2) on yeast, parallel Hydra jobs
	$(BIN)/python -m run -m experiment=reliance_weight $(ARGS)

sweep-hparams: $(STAMP)  ## the exploration that chose conf/hparams (DATASET=yeast by default)
	$(BIN)/python -m run -m experiment=mlmr_hparam_search dataset=$(or $(DATASET),yeast) $(ARGS)

compare: $(STAMP)  ## paper 000's seven methods on four datasets (parallel Hydra jobs)
	$(BIN)/python -m run experiment=ssl_comparison $(ARGS)
	$(BIN)/python -m run experiment=ssl_comparison_mediamill $(ARGS)

fs-sweep: $(STAMP)  ## paper 004's feature-fraction sweep and its all-features line
	$(BIN)/python -m run experiment=feature_fraction $(ARGS)
	$(BIN)/python -m run experiment=feature_fraction_all $(ARGS)

report: $(STAMP)  ## figures and Friedman/post-hoc tables of a comparison, read back from MLflow
	$(BIN)/python -m mlgraph.reporting.report experiment=$(or $(EXPERIMENT),ssl_comparison) $(ARGS)

clean:  ## remove run outputs (keeps the MLflow store)
	rm -rf $(OUT)/runs $(OUT)/multiruns

# The cluster services on this machine (root, apt-get; state in $MLGRAPH_SERVICES_DIR, default
# /tmp/mlgraph-services). See README, "On a SLURM cluster with a team server".
slurm-up:  ## one-node SLURM cluster (munged, slurmdbd, slurmctld, slurmd), installs slurm-wlm if missing
	bash scripts/slurm-up.sh

slurm-down:  ## stop the daemons slurm-up started
	bash scripts/slurm-down.sh

server-up: $(STAMP)  ## PostgreSQL + `mlflow server` with members only (basic-auth) on 127.0.0.1:$MLGRAPH_SERVER_PORT (default 5000)
	bash scripts/server-up.sh

server-down:  ## stop the MLflow server, its TLS proxy and PostgreSQL that server-up started
	bash scripts/server-down.sh

test-cluster: $(STAMP)  ## sweeps through the real SLURM into the PostgreSQL-backed server (starts both)
	$(BIN)/python -m pytest -m cluster tests/cluster
