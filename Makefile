# The two commands of a fresh machine: `make demo` and `make test`.
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint bench

setup:
	scripts/setup.sh

demo: setup
	$(BIN)/wattlog demo

test:
	scripts/setup.sh --servers
	$(BIN)/python -m pytest -q -p no:cacheprovider
	$(BIN)/ruff check wattlog telemetry accounting trainer dashboards tests bench

lint: setup
	$(BIN)/ruff check wattlog telemetry accounting trainer dashboards tests bench
	$(BIN)/mypy -p wattlog
