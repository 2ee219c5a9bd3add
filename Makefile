# Everything a developer or CI runs. `make test` and `make run` need nothing but
# Python 3.11+ and Go on PATH: they create .venv and build the control plane into
# ~/.cache/pykueue on first use.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LOCKED := $(VENV)/.locked
UV_ENV := $(VENV)/uv
UV := $(UV_ENV)/bin/uv
RUN_DIR ?= .run
INTEGRATIONS ?=
AUTOSCALER ?=
CLUSTER ?=
IMG ?= pykueue:dev
BASE ?=
ALLOW_UNPINNED_BASE ?=
DOCKER_BUILD_FLAGS ?=
KUBECTL ?= kubectl

.PHONY: help venv lock test unit e2e e2e-provisioning autoscaler-binary lint manifests binaries cluster-up cluster-down up down run \
        bench bench-webhook bench-core bench-dashboard bench-memory image e2e-kind e2e-real clean deploy undeploy

help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

# Dependencies come only from the hashed lock (requirements/, written by `make lock`): pip refuses
# any file whose hash is not there, and wheels only, so no package's build code runs at install.
# A new lock recreates the venv (--clear), so it holds exactly what CI and the image hold; a
# pyproject.toml edit only reinstalls the project, and `pip check` then fails on a stale lock.
PIP_LOCKED := --require-hashes --only-binary :all:
$(LOCKED): requirements/dev.txt
	$(PY) -m venv --clear $(VENV)
	$(BIN)/pip install -q $(PIP_LOCKED) -r requirements/dev.txt
	touch $@

$(STAMP): $(LOCKED) pyproject.toml
	$(BIN)/pip install -q --no-deps --no-build-isolation -e .
	$(BIN)/pip check >/dev/null || { $(BIN)/pip check; echo "requirements/dev.txt does not satisfy pyproject.toml: run make lock" >&2; exit 1; }
	touch $@

venv: $(STAMP) ## create .venv from the hashed lock requirements/dev.txt, then the project (--no-deps)

# uv resolves (fast, and one --universal lock serves every platform and Python >= 3.11); it is
# itself installed from a hashed lock, in a venv of its own so a stale project venv never blocks it.
LOCK_FLAGS := --universal --python-version 3.11 --generate-hashes --quiet --custom-compile-command 'make lock'
LOCK_ARGS ?=
$(UV): requirements/uv.txt
	$(PY) -m venv --clear $(UV_ENV)
	$(UV_ENV)/bin/pip install -q $(PIP_LOCKED) -r requirements/uv.txt
	touch $@

lock: $(UV) ## re-resolve the hashed locks in requirements/ from pyproject.toml (LOCK_ARGS=--upgrade for newer pins)
	$(UV) pip compile pyproject.toml requirements/build.in $(LOCK_FLAGS) $(LOCK_ARGS) -o requirements/runtime.txt
	$(UV) pip compile pyproject.toml requirements/build.in --extra dev -c requirements/runtime.txt \
		$(LOCK_FLAGS) $(LOCK_ARGS) -o requirements/dev.txt
	$(UV) pip compile requirements/uv.in $(LOCK_FLAGS) $(LOCK_ARGS) -o requirements/uv.txt

binaries: ## build etcd, kube-apiserver, kcm, scheduler, kubectl, kwok into ~/.cache/pykueue
	e2e/build-binaries.sh

# The operators e2e/test_worker_integrations.py runs (all seven; the Spark operator cannot run here, only its
# CRD goes in). The training-operator and the MPI operator cost make test their cold builds on a fresh machine
# (257 s and 418 s alone); CI's extended suite then finds them cached.
TEST_OPERATORS := jobset lws appwrapper trainer training-operator mpi-operator kuberay

# The ProvisioningRequest e2e (marker `autoscaler`) runs a real cluster-autoscaler whose cold build takes
# over 3 minutes: its own target, so make test and CI need not pay it.
test: $(STAMP) binaries test-operator-binaries ## unit, integration and e2e tests (starts and stops a local control plane; e2e/test_worker_integrations.py runs JobSet, LWS, AppWrapper, Trainer, the training-operator, the MPI operator and KubeRay, and SparkApplication without its operator)
	$(BIN)/python -m pytest tests e2e -p no:cacheprovider -m "not failover and not real_install and not autoscaler"

unit: $(STAMP) ## unit tests only (no control plane)
	$(BIN)/python -m pytest tests/unit

e2e: $(STAMP) binaries test-operator-binaries ## e2e suite (KUBECONFIG_E2E=path to use an existing cluster with us deployed)
	$(BIN)/python -m pytest e2e -m "not real_install and not autoscaler"

autoscaler-binary: ## build cluster-autoscaler 1.33.0 (kwok cloud provider) and fetch the ProvisioningRequest CRD into ~/.cache/pykueue
	e2e/build-autoscaler.sh

e2e-provisioning: $(STAMP) binaries autoscaler-binary ## the ProvisioningRequest e2e: admission checks answered by a real cluster-autoscaler on the local stack
	$(BIN)/python -m pytest e2e/test_worker_provisioning.py -p no:cacheprovider

lint: $(STAMP) ## ruff, mypy --strict, import layers
	$(BIN)/ruff check webhook certs tests e2e bench
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

manifests: $(STAMP) ## regenerate manifests/ (CRDs, RBAC, Deployment, webhooks, overlays) and charts/pykueue
	$(BIN)/python -m webhook.install manifests

deploy: $(STAMP) ## install into the current kubectl context (IMG=image, built with `make image IMG=...`)
	$(BIN)/python -m webhook.install deploy --image $(IMG) --kubectl $(KUBECTL)

undeploy: $(STAMP) ## remove what `make deploy` installed from the current kubectl context
	$(BIN)/python -m webhook.install undeploy --kubectl $(KUBECTL)

cluster-up: $(STAMP) binaries ## local control plane on loopback (etcd, apiserver, kcm, scheduler, kwok + 6 nodes)
	$(BIN)/python e2e/cluster.py up --dir $(RUN_DIR)/cluster

cluster-down: ## stop the local control plane
	$(BIN)/python e2e/cluster.py down --dir $(RUN_DIR)/cluster

up: $(STAMP) binaries $(if $(AUTOSCALER),autoscaler-binary) ## control plane + CRDs + our server (host process) + webhook configurations + dashboard (prints its URL); INTEGRATIONS=jobset,lws,appwrapper,trainer,training-operator,mpi-operator,kuberay also runs those operators (spark: only its CRD); AUTOSCALER=1 a cluster-autoscaler answering ProvisioningRequests
	$(BIN)/python e2e/stack.py up --dir $(RUN_DIR) $(if $(INTEGRATIONS),--integrations $(INTEGRATIONS)) $(if $(AUTOSCALER),--autoscaler)

down: ## stop everything `make up` started
	$(BIN)/python e2e/stack.py down --dir $(RUN_DIR)

run: $(STAMP) ## the seeds' GPU example end to end (CLUSTER=current uses your kubectl context)
	@if [ -z "$(CLUSTER)" ]; then $(MAKE) --no-print-directory binaries >/dev/null; fi
	$(BIN)/python e2e/demo.py --dir $(RUN_DIR) $(if $(CLUSTER),--cluster $(CLUSTER))

bench: bench-webhook bench-core bench-dashboard bench-memory ## all benchmarks

bench-webhook: $(STAMP) ## webhook throughput and latency vs a constant-answer baseline
	$(BIN)/python bench/bench_webhook.py

bench-core: $(STAMP) ## admission core: cycle time and memory vs pending workloads
	$(BIN)/python bench/bench_core.py

bench-dashboard: $(STAMP) ## dashboard: overview and Workloads page render time at 1,000 and 10,000 workloads vs none
	$(BIN)/python bench/bench_dashboard.py

bench-memory: $(STAMP) ## worker RSS per 1,000 cached Jobs + Workloads + Pods: the cache transform vs managedFields dropped only
	$(BIN)/python bench/bench_memory.py

image: ## container image for the server (needs Docker; IMG=name:tag, BASE=name@sha256:digest, ALLOW_UNPINNED_BASE=1 for a local stand-in, DOCKER_BUILD_FLAGS=e.g. --network host)
	docker build $(if $(BASE),--build-arg BASE=$(BASE)) $(if $(ALLOW_UNPINNED_BASE),--build-arg ALLOW_UNPINNED_BASE=$(ALLOW_UNPINNED_BASE)) \
		$(DOCKER_BUILD_FLAGS) -t $(IMG) .

E2E_REAL_ARGS ?=

e2e-real: $(STAMP) ## as root: a real node (containerd, kubelet, kube-proxy) in a private network namespace, our image built without Docker, `make deploy` then `helm install`, the e2e suite against each (E2E_REAL_ARGS="--install deploy": one of them)
	$(BIN)/python e2e/real.py run --image $(IMG) --dir $(RUN_DIR)/real $(E2E_REAL_ARGS)

e2e-kind: image ## kind cluster, deploy, and the same e2e suite (needs Docker and kind)
	kind create cluster --name pykueue --config e2e/kind-config.yaml
	kind load docker-image $(IMG) --name pykueue
	mkdir -p $(RUN_DIR) && kind get kubeconfig --name pykueue > $(RUN_DIR)/kind.kubeconfig
	KUBECONFIG=$(RUN_DIR)/kind.kubeconfig $(BIN)/python -m webhook.install deploy --image $(IMG) --pull-policy IfNotPresent
	KUBECONFIG_E2E=$(RUN_DIR)/kind.kubeconfig $(BIN)/python -m pytest e2e -m "not local_stack and not real_install"

clean: down
	rm -rf $(VENV) $(RUN_DIR)

# --- upstream comparison (e2e/build-kueue.sh builds upstream Kueue from e2e/tools/kueue/go.mod)
.PHONY: kueue-binaries operator-binaries test-operator-binaries bench-scale bench-webhook-compare e2e-upstream
BENCH_SCALE_ARGS ?=
SYSTEM ?= ours
SUITE ?= singlecluster-baseline
UPSTREAM_SUITE_ARGS ?=

kueue-binaries: ## build upstream Kueue's perf runner, minimalkueue, manager and e2e suites into ~/.cache/pykueue
	e2e/build-kueue.sh

operator-binaries: ## build JobSet, LWS, AppWrapper, Kubeflow Trainer, the training-operator, the MPI operator and KubeRay at upstream Kueue's pinned versions into ~/.cache/pykueue
	e2e/build-operators.sh

test-operator-binaries: ## build the operators make test runs
	e2e/build-operators.sh $(TEST_OPERATORS)

e2e-upstream: $(STAMP) binaries kueue-binaries ## an upstream Kueue e2e suite, unchanged (SUITE=singlecluster-baseline|singlecluster-extended|singlecluster-prometheus|tas-baseline|multikueue-baseline|multikueue-sequential|sequential-baseline|sequential-extended; singlecluster-prometheus and the sequential ones as root on a real node (singlecluster-prometheus with an in-cluster Prometheus), the multikueue ones on three control planes), against SYSTEM=ours (default) or upstream
	$(BIN)/python e2e/upstream_suite.py run --suite $(SUITE) --system $(SYSTEM) $(UPSTREAM_SUITE_ARGS)

bench-scale: $(STAMP) binaries kueue-binaries ## upstream's scheduler perf runner (15,000 workloads): minimalkueue vs our worker
	$(BIN)/python bench/bench_scale.py $(BENCH_SCALE_ARGS)

bench-webhook-compare: $(STAMP) binaries kueue-binaries ## mutate Job/Pod req/s and p50/p99: upstream's manager vs our server
	$(BIN)/python bench/bench_webhook_compare.py

.PHONY: soak failover
SOAK_ARGS ?=

failover: $(STAMP) binaries ## the leader-failover e2e alone (also part of make test)
	$(BIN)/python -m pytest e2e/test_reliability_failover.py -p no:cacheprovider

soak: $(STAMP) binaries ## long reliability runs (SOAK_ARGS="--load 10000 --only load": the memory soak) (load 5,000 Jobs; failover 2,000 Jobs / 20 leader kills; outages 1,000 Jobs / 10 worker kills, 2 apiserver restarts, a 330 s pause); prints figures
	$(BIN)/python e2e/soak.py $(SOAK_ARGS)
