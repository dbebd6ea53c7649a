# The two commands a user needs (README): `make demo` and `make test`. Both do all set-up.
SHELL := /bin/bash
VENV ?= .venv
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

.PHONY: setup demo test lab-down lab-status lint unit lock

setup:
	@scripts/setup.sh

## Build the venv and the lab, then run site.yml against the simulated rack.
demo: setup
	@scripts/demo.sh

## Everything CI runs: lint, unit, lab integration, molecule.
test: setup
	@scripts/test.sh

lab-down: setup
	racksmith lab down

lab-status: setup
	racksmith lab status

lint: setup
	ruff check .
	ANSIBLE_INVENTORY=$(CURDIR)/tests/lint/inventory.ini ansible-lint --offline

unit: setup
	pytest -q -n auto tests/unit

## Re-pin the whole Python tool chain after changing pyproject.toml.
lock:
	rm -rf /tmp/racksmith-lock && python3 -m venv /tmp/racksmith-lock
	/tmp/racksmith-lock/bin/pip install -q -e '.[dev]'
	{ echo "# Full lock of the Python tool chain (pip freeze of a clean 'make setup')."; \
	  echo "# Regenerate with: make lock"; \
	  /tmp/racksmith-lock/bin/pip freeze --exclude-editable; } > constraints.txt
