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

# mypy does not follow setuptools' editable finder (wattlog.trainer lives in trainer/): it checks the
# package as users install it, the wheel unpacked into build/typecheck/site.
TYPECHECK := build/typecheck

lint: setup
	$(BIN)/ruff check wattlog telemetry accounting trainer dashboards tests bench
	$(BIN)/ruff format --check -q wattlog telemetry accounting trainer dashboards tests bench
	$(MAKE) --no-print-directory typecheck

typecheck:
	rm -rf $(TYPECHECK) && mkdir -p $(TYPECHECK)
	$(BIN)/python -m pip wheel --no-deps --no-build-isolation -q -w $(TYPECHECK) .
	$(BIN)/python -m zipfile -e $(TYPECHECK)/wattlog-*.whl $(TYPECHECK)/site
	MYPYPATH=$(TYPECHECK)/site $(BIN)/mypy --cache-dir $(TYPECHECK)/cache -p wattlog
