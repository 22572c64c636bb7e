# Two commands for readers and CI: `make book` and `make test`. Both set up .venv first.
# `make unit` is the quick loop while working on companion. `make outputs` is the only way the
# committed notebook outputs are produced.

PYTHON ?= python3
# The Pythons the lock is tested on (CI's matrix); any other stops before anything is installed.
SUPPORTED_PYTHONS := 3.11 3.12
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# The pinned environment. `make outputs` and `make test` share it, so committed outputs
# reproduce digit for digit: float sums depend on the thread count and on the SIMD path.
export PATH := $(CURDIR)/$(BIN):$(PATH)
export OMP_NUM_THREADS := 2
# Idle OpenMP threads sleep instead of spinning: the same arithmetic (measured: bitwise equal
# weights), but a busy 2-core machine no longer loses most of its time to spinning threads.
export OMP_WAIT_POLICY := PASSIVE
export MKL_NUM_THREADS := 2
export COMPANION_NUM_THREADS := 2
export ATEN_CPU_CAPABILITY := avx2
export MKL_CBWR := AVX2
export PYTHONHASHSEED := 0
export COMPANION_DEVICE := cpu
# Training progress is live in Jupyter and Colab, silent here: outputs must not depend on timings.
export COMPANION_PROGRESS := off
# ipykernel's debugger otherwise warns about frozen modules on stderr.
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: all setup book student nbgrader unit test test-foreign claims site-test site-test-debs \
	install-check colab-check outputs benchmarks lint lock clean

# $(call check-python,INTERPRETER): stop with a clear message unless it is a supported Python.
check-python = $(1) -c 'import sys; v = "%d.%d" % sys.version_info[:2]; \
	sys.exit(None if v in "$(SUPPORTED_PYTHONS)".split() else "error: $(1) is Python " + v + \
	"; supported: Python $(SUPPORTED_PYTHONS). Run e.g. make test PYTHON=python3.12")'

all: test

setup: $(STAMP)

# Exact pins from requirements.lock; companion itself in editable mode. d2l is the reference
# the tests compare against: its release pins old numpy and imports torchvision, so it goes in
# without its dependencies (the libraries it really imports are in the lock).
$(STAMP): requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(call check-python,$(PYTHON))
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(call check-python,$(BIN)/python)
	$(BIN)/python -m pip install --quiet -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps d2l==1.0.3
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	# Build matplotlib's font cache now, so its one-time notice never lands in a notebook.
	$(BIN)/python -c "import matplotlib.pyplot"
	touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build . -W --keep-going

# The book without solutions, for students: _build/student/{html,notebooks}. See the
# instructor guide page. `make test` checks that nothing of a solution survives in it.
student: $(STAMP)
	$(BIN)/python -m tools.student --out _build/student

# An nbgrader course from the book in _build/nbgrader (see the instructor guide page).
nbgrader: $(STAMP)
	$(BIN)/python -m tools.nbgrader --out _build/nbgrader

# Two tiers. `make unit`, like a bare `pytest`: companion's unit, property and structure tests
# (tests/), no notebooks, about a minute. `make test`: the lint, then those, the tests of the
# book's tools (tools/tests/: student edition, nbgrader, status page, claims) and every notebook
# under nbval. Both run on TEST_WORKERS pytest-xdist workers (0: one process); --dist loadscope
# keeps a notebook's cells on one worker (with pytest 9.2, xdist 3.8 ignores --dist loadgroup:
# pytest-dev/pytest-xdist#1386). Each kernel runs with the pinned threads above, so every
# printed number is the one a single process prints. A notebook's time is reported, not enforced.
TEST_WORKERS ?= 2
unit: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS)

test: lint
	$(BIN)/python -m pytest -v -n $(TEST_WORKERS) --dist loadscope tests tools/tests book

# Another CPU's float arithmetic on this one: torch's generic kernels and MKL's compatible path
# sum in another order, as another vendor's CPU does. Every notebook must still pass nbval:
# exact cells print the same, trained cells (tag `trained`) still meet their claims.
FOREIGN_NUMERICS := ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE
test-foreign: $(STAMP)
	$(FOREIGN_NUMERICS) $(BIN)/python -m pytest book -v -n $(TEST_WORKERS) --dist loadscope

# The spread of every trained claim over three seeds, the foreign and the AVX-512 numerics, into
# book/claims.json (the status page's table; tools/tests/test_claims.py checks it against the
# code). Any CPU: one without AVX-512 keeps that run while a notebook's code is unchanged.
# NOTEBOOKS= limits it to some notebooks, e.g. make claims NOTEBOOKS=book/transformer.ipynb
claims: $(STAMP)
	$(BIN)/python -m tools.claims sweep $(NOTEBOOKS)

# The browser test of the built site (site_test/): every page opened offline in headless
# Chromium. Playwright drives Debian's chromium package and never downloads a browser; the CJK
# font makes the glossary legible in the screenshots (_build/screenshots/). axe-core (inside the
# axe-playwright-python wheel) checks every page of the book and of the student edition against
# WCAG 2.1 A and AA, in light and dark mode; a keyboard walk checks a chapter's controls.
SITE_TEST_DEBS := chromium fonts-wqy-zenhei
site-test: site-test-debs $(STAMP) book student
	$(BIN)/python -m pytest site_test -v

# Checked before the book is built. Missing packages stop it with the command to run; only in
# CI (CI=true, a clean machine) does make install them itself, with apt-get.
site-test-debs:
	@missing=$$(for deb in $(SITE_TEST_DEBS); do \
	    dpkg-query -W -f='$${Status}' $$deb 2>/dev/null | grep -q 'ok installed' || echo $$deb; \
	  done); \
	missing=$$(echo $$missing); \
	sudo=$$([ "$$(id -u)" = 0 ] || echo "sudo "); \
	if [ -z "$$missing" ]; then \
	  :; \
	elif [ "$$CI" = true ]; then \
	  echo "site-test: CI=true, installing $$missing"; \
	  $${sudo}apt-get update && $${sudo}apt-get install -y --no-install-recommends $$missing; \
	else \
	  echo "site-test needs the Debian packages $$missing (the browser and a CJK font). Run:"; \
	  echo "  $${sudo}apt-get install --no-install-recommends $$missing"; \
	  exit 1; \
	fi

# companion as a reader installs it: a fresh venv with torch and companion's declared
# dependencies only, built non-editable from a copy; every module imported, one checker run.
install-check: $(STAMP)
	$(BIN)/python -m tools.colab_check install

# The book where Colab runs it: the install check on Python 3.12 (PYTHON312= names it), then
# every notebook, copied away from the repository, under `pytest --nbval-lax` with none of the
# pinned environment above. COLAB_TORCH= gives pip's arguments for torch (default: the lock's
# version from local wheels only; without one for 3.12 it says so and uses $(PYTHON)'s version).
colab-check: $(STAMP)
	PYTHON312="$(PYTHON312)" $(BIN)/python -m tools.colab_check colab \
	    $(if $(COLAB_TORCH),--torch "$(COLAB_TORCH)")

# Measured-time cells (# NBVAL_IGNORE_OUTPUT) keep their committed output while their code is
# unchanged; COMPANION_REFRESH_MEASUREMENTS=1 records new measurements.
# NOTEBOOKS= re-runs only those; a trained cell's output is re-recorded on every run.
outputs: $(STAMP)
	$(BIN)/python -m tools.notebooks execute $(NOTEBOOKS)
	$(BIN)/python -m tools.instructor_guide

# The measurements of the book's page of benchmarks (book/benchmarks.ipynb), on the CPU in the
# pinned environment above, into book/benchmarks/NAME-cpu.json; BENCHMARKS= re-runs only some.
# A GPU's files: COMPANION_DEVICE=cuda python -m companion.bench NAME --output
# book/benchmarks/NAME-gpu.json. Then `make outputs NOTEBOOKS=book/benchmarks.ipynb` shows them.
# decode-llama is `decode --model llama`.
BENCHMARKS ?= attention train tokenizer decode decode-llama
benchmarks: $(STAMP)
	for name in $(BENCHMARKS); do \
	    case $$name in decode-llama) run="decode --model llama";; *) run=$$name;; esac; \
	    $(BIN)/python -m companion.bench $$run --output book/benchmarks/$$name-cpu.json || exit 1; \
	done

# ruff's lint and format, and mypy over companion, tools and conftest.py (pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check companion tests tools site_test conftest.py
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf _build

# Re-resolve the lock from pyproject.toml's loose ranges with pip-tools' pip-compile (needs the
# package index). Pins already in the lock stay unless a range excludes them (LOCK_ARGS=--upgrade
# moves every one); torch stays at the lock's version. d2l is not in it: `setup` installs it
# with --no-deps.
LOCK_ARGS ?=
lock:
	rm -rf /tmp/companion-lock && $(PYTHON) -m venv /tmp/companion-lock
	/tmp/companion-lock/bin/python -m pip install --quiet pip-tools
	grep '^torch==' requirements.lock > /tmp/companion-lock/torch.txt
	CUSTOM_COMPILE_COMMAND="make lock" /tmp/companion-lock/bin/pip-compile --quiet \
	    --extra book --extra test --strip-extras --annotation-style line \
	    --allow-unsafe --no-emit-index-url --no-emit-find-links -c /tmp/companion-lock/torch.txt \
	    $(LOCK_ARGS) -o requirements.lock pyproject.toml
