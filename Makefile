# The two commands of a fresh machine: `make demo` and `make test`.
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test lint typecheck bench

setup:
	scripts/setup.sh

demo: setup
	$(BIN)/wattlog demo

test:
	scripts/setup.sh --servers
	$(BIN)/python -m pytest -q -p no:cacheprovider
	$(BIN)/ruff check wattlog telemetry accounting trainer dashboards tests bench
	$(BIN)/ruff format --check -q wattlog telemetry accounting trainer dashboards tests bench
	$(MAKE) --no-print-directory typecheck

lint: setup
	$(BIN)/ruff check wattlog telemetry accounting trainer dashboards tests bench
	$(BIN)/ruff format --check -q wattlog telemetry accounting trainer dashboards tests bench
	$(MAKE) --no-print-directory typecheck

# The public API (what wattlog/__init__.py exports, the framework integrations, the records users
# read) is also checked with --strict: no bare dict, no Any leaking out to a user's code.
PUBLIC_API := wattlog/__init__.py wattlog/records.py wattlog/integrations

# wattlog/telemetry and the other three are links to the top-level folders, so mypy and
# import-linter read the checkout itself: no wheel to build, nothing to reinstall.
typecheck:
	$(BIN)/lint-imports --no-cache
	$(BIN)/mypy -p wattlog
	$(BIN)/mypy --strict $(PUBLIC_API)
