"""Our admission worker behind minimalkueue's command line, for upstream's scheduler performance runner.

The runner (`test/performance/scheduler/runner --minimalKueue=PATH`) starts PATH as
`PATH --kubeconfig K [--cpuprofile F] [--memprofile F] [--zap-log-level N] [--metricsPort P]
[--enableTAS]`, stops it with SIGINT and records the child's wall time, CPU and max RSS from
wait4(). So this script exec()s into `python -m webhook worker` (same PID: the rusage is the
worker's own) with what minimalkueue hard-codes: client QPS 50 / burst 100, no leader election,
no webhooks, no metrics server, no visibility server (minimalkueue's main.go starts the core and TAS
controllers and the scheduler only; Kueue's visibility API is started by cmd/kueue, so the feed behind
ours, which parses every Workload event a second time, is off here: VisibilityOnDemand false).

It connects as the manager's own user (bench/apiserver_cost.py: the token kubeconfig beside the
runner's), so the API server's audit log tells its requests from the runner's.

Logs (WARNING and up, as minimalkueue logs errors only) go to pykueue-worker.log beside the
kubeconfig, i.e. in the runner's output directory. Profiling and metrics flags are accepted
and ignored. --enableTAS (minimalkueue's switch for its TAS controllers and indexers) needs nothing of
ours: topology-aware admission is on by default (beta) and costs nothing until a ResourceFlavor names a
Topology, which only the TAS generator config creates.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from apiserver_cost import manager_kubeconfig  # noqa: E402

# minimalkueue/main.go: kubeConfig.QPS = 50, Burst = 100; no leader election; metrics off (its
# BindAddress "0" unless --metricsPort); only the core controllers and the scheduler, so no job integrations.
CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
leaderElection:
  leaderElect: false
clientConnection:
  qps: 50
  burst: 100
metrics:
  bindAddress: "0"
integrations:
  frameworks: []
featureGates:
  VisibilityOnDemand: false
"""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--cpuprofile")
    p.add_argument("--memprofile")
    p.add_argument("--zap-log-level")
    p.add_argument("--metricsPort")
    p.add_argument("--enableTAS", action="store_true")
    args = p.parse_args(argv)
    work = Path(args.kubeconfig).resolve().parent
    config = work / "pykueue-config.yaml"
    config.write_text(CONFIG)
    log = os.open(work / "pykueue-worker.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.chdir(ROOT)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    argv_ = [
        sys.executable,
        "-m",
        "webhook",
        "worker",
        "--config",
        str(config),
        "--kubeconfig",
        str(manager_kubeconfig(Path(args.kubeconfig).resolve())),
        "--log-level",
        "WARNING",
    ]
    os.execve(sys.executable, argv_, env)  # never returns


if __name__ == "__main__":
    sys.exit(main())
