# Two commands for readers and CI: `make book` and `make test`. Both set up .venv first.
# `make outputs` is the only way the committed notebook outputs are produced.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# The pinned environment. `make outputs` and `make test` share it, so committed outputs
# reproduce digit for digit: float sums depend on the thread count and on the SIMD path.
export PATH := $(CURDIR)/$(BIN):$(PATH)
export OMP_NUM_THREADS := 2
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

.PHONY: all setup book student test site-test outputs lint lock clean

all: test

setup: $(STAMP)

# Exact pins from requirements.lock; companion itself in editable mode. d2l is the reference
# the tests compare against: its release pins old numpy and imports torchvision, so it goes in
# without its dependencies (the libraries it really imports are in the lock).
$(STAMP): requirements.lock pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
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
	$(BIN)/python -m companion.student --out _build/student

test: $(STAMP) student
	$(BIN)/python -m pytest -v

# The browser test of the built site (site_test/): every page opened offline in headless
# Chromium. Playwright drives Debian's chromium package and never downloads a browser; the CJK
# font makes the glossary legible in the screenshots (_build/screenshots/).
SITE_TEST_DEBS := chromium fonts-wqy-zenhei
site-test: $(STAMP) book
	@missing=$$(for deb in $(SITE_TEST_DEBS); do \
	    dpkg-query -W -f='$${Status}' $$deb 2>/dev/null | grep -q 'ok installed' || echo $$deb; \
	  done); \
	if [ -n "$$missing" ]; then \
	  sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$sudo apt-get update && $$sudo apt-get install -y --no-install-recommends $$missing; \
	fi
	$(BIN)/python -m pytest site_test -v

# Measured-time cells (# NBVAL_IGNORE_OUTPUT) keep their committed output while their code is
# unchanged; COMPANION_REFRESH_MEASUREMENTS=1 records new measurements.
outputs: $(STAMP)
	$(BIN)/python tools/notebooks.py execute

lint: $(STAMP)
	$(BIN)/ruff check companion tests tools site_test conftest.py

clean:
	rm -rf _build

# Re-resolve the lock from pyproject.toml's loose ranges in a scratch venv (needs the network
# to the package index). torch is held at the version the lock already names.
lock:
	rm -rf /tmp/companion-lock && $(PYTHON) -m venv /tmp/companion-lock
	/tmp/companion-lock/bin/python -m pip install --quiet setuptools wheel \
	    "torch==$$(sed -n 's/^torch==\([^+]*\).*/\1/p' requirements.lock)" -e ".[book,test]"
	( echo "# Exact pins for the book, CI and make outputs. Regenerate with: make lock"; \
	  /tmp/companion-lock/bin/python -m pip freeze --all --exclude-editable \
	    | grep -v '^pip==' | sed 's/^torch==\([^+]*\)+.*/torch==\1/' ) > requirements.lock
