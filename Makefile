# feedbackd: two commands do all set-up on a fresh machine.
#   make run    create .venv, install feedbackd (not the dev tools), build a demo workspace in
#               .demo/ and run the daemon there
#   make test   create .venv, install dev dependencies, run ruff, the import layers, mypy and
#               every test on four workers, measuring line coverage (it fails under 90 %)
# And one for while you work:
#   make check  ruff, the import layers, mypy and every test outside the slow ring (the tests
#               that start the daemon or a server, or a hundred processes), without coverage
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
DEMO := .demo
# pytest workers: the tests wait on daemons, git, settle times and graces for half their time
# (three workers kept these 2-core machines a fifth idle); four keep them busy.
WORKERS ?= 4
# The tests' folders go to memory (/dev/shm, a tmpfs) where the machine has one with a GiB free:
# what they test is feedbackd's files and git, not the disk, and on a disk each fsync feedbackd
# makes for durability waits for it (the application's tests took half again the system time
# and a sixth more time there). A container's small /dev/shm (64 MiB) leaves them on $TMPDIR.
TEST_TMPDIR ?= $(shell [ -w /dev/shm ] && [ "$$(df --output=avail -k /dev/shm 2>/dev/null | tail -n 1)" -gt 1048576 ] 2>/dev/null && echo /dev/shm || echo "$${TMPDIR:-/tmp}")
# The tests start Python hundreds of times: without its bytecode cache each one compiles
# feedbackd anew (a command starts in 0.45 s, not 0.3 s) and each pytest worker rewrites every
# test module again (6 s). The caches go to __pycache__/, which git ignores. An editable install
# leaves feedbackd's own modules uncompiled: they are compiled at install, so that a program
# started outside make (an MCP host starting `feedbackd mcp`) finds them so even where
# PYTHONDONTWRITEBYTECODE is set (each start would compile them anew: a tenth of a second).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test checks check lint typecheck browser collected pytest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The demo needs feedbackd's own dependencies alone; the dev tools (pytest, mypy, ruff,
# hypothesis, playwright) take much longer to install and only `make test` uses them.
# uv installs in seconds what pip takes half a minute over (its resolver and unpacking run on one
# core); pip is the fallback where uv cannot be had. --compile-bytecode: as pip does, else the
# workers' and the daemons' first imports would each compile the libraries anew.
$(BIN)/uv: | $(BIN)/python
	$(BIN)/python -m pip install --quiet uv || echo "note: no uv; pip installs instead (slower)"

define install
if [ -x $(BIN)/uv ]; then $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python $(1); \
else $(BIN)/python -m pip install --quiet $(1); fi
endef

$(RUN_STAMP): pyproject.toml | $(BIN)/uv
	$(call install,-e .)
	$(BIN)/python -m compileall -q daemon/feedbackd
	touch $(RUN_STAMP)

$(STAMP): pyproject.toml | $(BIN)/uv
	$(call install,-e '.[dev]')
	$(BIN)/python -m compileall -q daemon/feedbackd
	touch $(STAMP) $(RUN_STAMP)

run: $(RUN_STAMP)
	@$(BIN)/python -m feedbackd.cli.demo $(DEMO)

# The steps run side by side where they may (chromium's install beside the virtualenv's, ruff
# and mypy beside the tests), each line of their output printed whole as it comes.
test:
	@$(MAKE) --no-print-directory --jobs=4 --output-sync=line checks

checks: lint typecheck pytest

check: $(STAMP) lint typecheck
	TMPDIR=$(TEST_TMPDIR) $(BIN)/pytest -q -p no:cacheprovider -n $(WORKERS) --dist loadscope --no-loadscope-reorder -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check daemon tests
	$(BIN)/ruff format --check daemon tests
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# The web panel's tests drive Debian's Chromium, its headless shell where it is there (the
# engine without the desktop browser: tests/browser_kit.py); install that where we may (root,
# apt), with the fonts the panel's screenshots are drawn in.
browser:
	@command -v chromium-headless-shell >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium-headless-shell for the browser tests"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	      --no-install-recommends chromium-headless-shell fonts-liberation >/dev/null; \
	  else \
	    echo "note: no chromium; the browser tests are skipped (apt-get install chromium-headless-shell)"; \
	  fi; }

# The test modules as pytest rewrites them for its asserts, cached (__pycache__/) by one
# collection before the workers start: finding no cache, each worker rewrote every module (6 s
# of CPU each). It runs beside chromium's install, ruff and mypy.
collected: $(STAMP)
	$(BIN)/pytest -q -p no:cacheprovider --collect-only >/dev/null

# Coverage follows the tests into the workers and into the daemon, `serve` and `mcp` processes
# of the modules marked `measured_processes` (pyproject.toml, [tool.coverage]; tests/conftest.py);
# each writes its own .coverage.* file, joined before the report.
# --dist loadscope: each module goes whole to one worker, the slow ring's first (conftest.py).
pytest: $(STAMP) browser collected
	$(BIN)/coverage erase
	TMPDIR=$(TEST_TMPDIR) $(BIN)/coverage run -m pytest -q -p no:cacheprovider -n $(WORKERS) --dist loadscope --no-loadscope-reorder
	$(BIN)/coverage combine --quiet
	$(BIN)/coverage report

bench: $(STAMP)
	$(BIN)/python -m tests.bench

clean:
	rm -rf $(VENV) $(DEMO) .coverage .coverage.*
