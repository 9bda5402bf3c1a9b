# MamboMeme. `make help` lists the targets.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
CORPUS  ?= fixture
# stages/python runs stages with the python of the dvc that launched them; the venv first on PATH too
export PATH := $(CURDIR)/$(BIN):$(PATH)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: help setup demo test check repro pool adjudicate dvc clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

$(BIN)/mambomeme: pyproject.toml constraints.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e ".[test]"
	touch $@

setup: $(BIN)/mambomeme  ## create the virtual environment (torch pinned by constraints.txt)

demo: setup  ## set up, run the main job (the fixture corpus's pipeline), say where results are
	$(BIN)/dvc repro score@fixture
	@echo
	@echo "Built:     build/fixture/ (items, lexical.sqlite, term-lists/, dense/, query-encoder/, reranker/) and manifests/corpus-fixture.json"
	@echo "Scorecard: reports/scorecard.md (and reports/scorecard.json)"
	@echo "Search:    $(BIN)/mambomeme search \"john cena\"      (or --json; cues with '|')"
	@echo "TUI:       $(BIN)/mambomeme tui"

test: setup  ## set up and run the whole test suite (slow tests included)
	$(BIN)/python -m pytest

check: setup  ## lint and type-check
	$(BIN)/ruff check mambomeme stages tests
	$(BIN)/mypy

repro: setup  ## one corpus's pipeline (its own lock entries and outputs): make repro CORPUS=memes-10k
	$(BIN)/dvc repro score@$(CORPUS)

pool: setup  ## a corpus's pipeline up to the pool stage (blind annotator folders): make pool CORPUS=memes-10k
	$(BIN)/dvc repro pool@$(CORPUS)

adjudicate: setup  ## agreement, queue for a third annotator, verify or freeze the judgement set
	$(BIN)/dvc repro adjudicate@$(CORPUS)

dvc: setup  ## any dvc command, its stages run by the venv's python: make dvc ARGS="repro score@fixture"
	$(BIN)/dvc $(ARGS)

clean:  ## remove build outputs (not the venv)
	rm -rf build runs
