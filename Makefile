# Controllers from Scratch: the two commands (see README.md).
#
#   make course   set up Python, start a cluster, open the course in JupyterLab
#   make test     set up Python, start the local control plane, run every test and notebook
#
# Smaller steps: make setup | up | lab | status | down | lint | export | preflight | mutations
# The course as a web site from the stored outputs (no cluster): make book -> build/book/index.html
# Workshops (docs/facilitator.md): make workshop-up ATTENDEES=alice,bob | make workshop-down
# A room whose attendees need only a browser (root, docs/facilitator.md): make hub ATTENDEES=alice,bob

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
INSTALLED := $(VENV)/.installed

.PHONY: course test test-browser mutations setup up lab status down lint export preflight book workshop-up workshop-down hub hub-down

course: up lab

test: setup
	$(PY) -m tests.run_all

# Only the browser tests: the live widgets in JupyterLab, in headless Chromium (`make up` first).
test-browser: setup
	KUBECONFIG="$$($(PY) -m helpers.cluster kubeconfig)" $(PY) -m pytest -p no:cacheprovider \
	  -rfEsxX tests/test_browser.py

# The mutation drill (README "The mutation drill"): plant each bug of tests/mutations.py in a
# copy of the repository and check that its chapter or a unit test fails (`make up` first).
mutations: setup
	KUBECONFIG="$$($(PY) -m helpers.cluster kubeconfig)" $(PY) -m tests.mutation_drill

setup: $(INSTALLED)

$(INSTALLED): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { \
	  echo "error: the course needs Python 3.11 or newer, and '$(PYTHON)' is older."; \
	  echo "next step: install Python 3.11+, or run 'make PYTHON=python3.11 ...'."; exit 1; }
	@echo "==> setting up the Python environment in $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e .
	@touch $(INSTALLED)

up: setup
	$(PY) -m helpers.cluster up

# JupyterLab refuses to run as root unless told; containers and CI machines often are root.
# jupyter/ holds the course's settings: no news pop-up, kernels over CurveZMQ (see its README).
# The kernels use the course's cluster, or the kubeconfig LAB_KUBECONFIG names (a workshop
# attendee's file: make lab LAB_KUBECONFIG=~/alice.kubeconfig).
LAB_KUBECONFIG ?=
lab: setup
	JUPYTER_CONFIG_PATH="$(CURDIR)/jupyter$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" \
	KUBECONFIG="$(if $(LAB_KUBECONFIG),$(abspath $(LAB_KUBECONFIG)),$$($(PY) -m helpers.cluster kubeconfig))" \
	  $(VENV)/bin/jupyter lab notebooks/ \
	  $$([ "$$(id -u)" = 0 ] && echo --allow-root)

status: setup
	$(PY) -m helpers.cluster status

down: setup
	$(PY) -m helpers.cluster down

# ruff, mypy over helpers/, and whether every module the chapters write still matches its
# chapter (seconds).
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(PY) -m helpers.export --check

# The chapters write helpers/: after editing a `#| export` cell, regenerate the modules.
export: setup
	$(PY) -m helpers.export

# The Foo controller as a program, on the course's cluster, named explicitly (it finds a
# kubeconfig as controller-runtime does, never the course's by itself; README "Run the
# controller outside the notebook"): make controller CONTROLLER_ARGS="--namespace default"
CONTROLLER_ARGS ?= --namespace default
.PHONY: controller
controller: setup
	$(VENV)/bin/foo-controller --kubeconfig "$$($(PY) -m helpers.cluster kubeconfig)" $(CONTROLLER_ARGS)

# Is this machine and the cluster (KUBECONFIG, else the course's) ready? One table, exit 1 on a problem.
preflight: setup
	$(PY) -m helpers.cluster.preflight

# The chapters as a static site with their stored outputs (nothing runs; README "The book").
# BOOK_OUT is replaced whole, so it must be empty, missing or an earlier build of the book.
BOOK_OUT ?= build/book
book: setup
	$(PY) -m book.build --out "$(BOOK_OUT)"

# A shared cluster for a workshop: namespaces, a ServiceAccount and a kubeconfig per attendee.
ATTENDEES ?=
# WORKSHOP_ARGS passes more options: --server URL, --token-hours N, --out DIR, --allow-loopback.
WORKSHOP_ARGS ?=
workshop-up: setup
	@[ -n "$(ATTENDEES)" ] || { echo "error: name the attendees: make workshop-up ATTENDEES=alice,bob"; exit 2; }
	$(PY) -m helpers.cluster.workshop up --attendees "$(ATTENDEES)" $(WORKSHOP_ARGS)

workshop-down: setup
	$(PY) -m helpers.cluster.workshop down $(if $(ATTENDEES),--attendees "$(ATTENDEES)")

# A room with nothing to install: JupyterHub on this machine (run as root), one account, JupyterLab
# and set of namespaces per attendee (docs/facilitator.md). Starts the course's cluster first,
# unless HUB_KUBECONFIG names another. HUB_ARGS passes more options: --login codes (a code per
# attendee), --code WORD, --port N (8000), --idle-minutes N (60), --token-hours N (48),
# --ssl-cert FILE --ssl-key FILE. Again with more names: adds them to the running hub.
HUB_KUBECONFIG ?=
HUB_ARGS ?=
hub: setup $(if $(HUB_KUBECONFIG),,up)
	@[ -n "$(ATTENDEES)" ] || { echo "error: name the attendees: make hub ATTENDEES=alice,bob"; exit 2; }
	$(PY) -m helpers.cluster.hub up --attendees "$(ATTENDEES)" \
	  --kubeconfig "$(if $(HUB_KUBECONFIG),$(abspath $(HUB_KUBECONFIG)),$$($(PY) -m helpers.cluster kubeconfig))" \
	  $(HUB_ARGS)

# Stop the hub and its servers; remove the accounts it made, their homes and their namespaces
# (ATTENDEES=bob: only those attendees, the hub keeps running for the others).
hub-down: setup
	$(PY) -m helpers.cluster.hub down $(if $(ATTENDEES),--attendees "$(ATTENDEES)")
