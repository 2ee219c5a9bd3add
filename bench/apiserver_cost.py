"""What a manager costs the API server in `make bench-scale`: the kube-apiserver's CPU and peak RSS, and every
request the manager sent, by verb and resource, with the bytes of its request bodies.

The runner starts its own envtest control plane from KUBEBUILDER_ASSETS and hands the manager a
kubeconfig with the same admin certificate it uses itself, so the API server cannot tell the two
apart. Both are changed the same way for both sides:

- `prepare_assets` makes an assets directory whose `kube-apiserver` is a script that execs the real
  one (same PID, so it can be sampled) with three more flags: a static token for user
  `bench-manager` (group system:masters, the admin's rights), an audit policy that records only
  that user's requests (metadata for reads and watches, the request body for writes) and an
  audit log in the run's directory (batch mode, so auditing does not slow the requests down).
- `manager_kubeconfig` rewrites the runner's kubeconfig to that token. Our worker
  (minimal_pykueue.py) and upstream's minimalkueue (bench/minimalkueue-upstream) both start
  through it; it costs tens of milliseconds of either side's CPU.
- `ProcessSampler` reads the API server's /proc figures while the run goes (every half second,
  so the last half second may be missing from its CPU); `summarize_audit` counts the log.

The runner's own requests (creating workloads, finishing them) reach the same API server: its CPU
is the manager's share plus the runner's, which is the same work for both sides.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

USER = "bench-manager"
#: Not a secret: the envtest API server lives for one run and listens on localhost only.
TOKEN = "bench-manager-token"
PIDFILE_ENV = "BENCH_APISERVER_PIDFILE"
AUDIT_LOG = "apiserver-audit.log"
SUMMARY = "apiserver.json"

# Writes at Request level (their bodies are what the manager sent); everything else of the manager's
# at Metadata; nobody else's. RequestReceived is left out: an event per request at its end (watches
# also log ResponseStarted, counted once by auditID).
AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [
        {"level": "Request", "users": [USER], "verbs": ["create", "update", "patch", "delete", "deletecollection"]},
        {"level": "Metadata", "users": [USER]},
        {"level": "None"},
    ],
}

WRAPPER = """#!/bin/sh
# bench/apiserver_cost.py: the real kube-apiserver, with a token for the manager and its audit log.
echo $$ > "${{{pidfile_env}:-/dev/null}}"
exec {real} "$@" --token-auth-file={tokens} --audit-policy-file={policy} --audit-log-path={log} \\
  --audit-log-format=json --audit-log-mode=batch --audit-log-maxbackup=0 --audit-log-maxsize=1000000
"""


def prepare_assets(k8s_bin: Path, out: Path) -> Path:
    """An envtest assets directory: etcd and kubectl as built, kube-apiserver wrapped as above."""
    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    for name in ("etcd", "kubectl"):
        link = assets / name
        if not link.exists():
            link.symlink_to(k8s_bin / name)
    tokens = out / "apiserver-tokens.csv"
    tokens.write_text(f'{TOKEN},{USER},{USER},"system:masters"\n')
    policy = out / "apiserver-audit-policy.yaml"
    policy.write_text(yaml.safe_dump(AUDIT_POLICY))
    script = assets / "kube-apiserver"
    script.write_text(
        WRAPPER.format(
            pidfile_env=PIDFILE_ENV,
            real=k8s_bin / "kube-apiserver",
            tokens=tokens,
            policy=policy,
            log=out / AUDIT_LOG,
        )
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return assets


def manager_kubeconfig(kubeconfig: Path) -> Path:
    """The runner's kubeconfig with its client certificate replaced by the manager's token, beside it."""
    config = yaml.safe_load(kubeconfig.read_text())
    for entry in config.get("users") or []:
        entry["user"] = {"token": TOKEN}
    path = kubeconfig.with_name(f"{kubeconfig.name}-{USER}")
    path.write_text(yaml.safe_dump(config))
    return path


@dataclass
class ProcessSampler:
    """The last CPU seconds and peak RSS seen for the process whose PID the wrapper wrote."""

    pidfile: Path
    cpu_s: float = 0.0
    peak_rss_mib: float = 0.0

    def sample(self) -> None:
        try:
            pid = int(self.pidfile.read_text().split()[0])
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            status = Path(f"/proc/{pid}/status").read_text()
        except (OSError, ValueError, IndexError):
            return  # not started yet, or gone: keep the last figures
        ticks = os.sysconf("SC_CLK_TCK")
        self.cpu_s = max(self.cpu_s, (int(fields[11]) + int(fields[12])) / ticks)  # utime, stime
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                self.peak_rss_mib = max(self.peak_rss_mib, int(line.split()[1]) / 1024)


def summarize_audit(lines: Iterable[bytes]) -> dict[str, dict[str, int]]:
    """`verb resource[/subresource]` -> requests and request-body bytes, each request once."""
    seen: set[str] = set()
    out: dict[str, dict[str, int]] = {}
    for line in lines:
        if not line.strip():
            continue
        event: dict[str, Any] = orjson.loads(line)
        if event.get("auditID") in seen:
            continue
        seen.add(event.get("auditID", ""))
        ref = event.get("objectRef") or {}
        resource = ref.get("resource") or event.get("requestURI", "?").split("?")[0]
        if ref.get("subresource"):
            resource += "/" + ref["subresource"]
        row = out.setdefault(f"{event.get('verb', '?')} {resource}", {"requests": 0, "bytes": 0})
        row["requests"] += 1
        if "requestObject" in event:
            row["bytes"] += len(orjson.dumps(event["requestObject"]))
    return out


def _lines(paths: Iterable[Path]) -> Iterator[bytes]:
    for path in paths:
        with open(path, "rb") as f:
            yield from f


def write_summary(out: Path, sampler: ProcessSampler, *, keep_audit: bool = False) -> None:
    """apiserver.json in the run's directory (the audit log, large, is summarized and removed unless
    `keep_audit`: request timing and bodies for a closer look). The log is not rotated (a 1 TB
    limit: the flag's 0 means lumberjack's 100 MB), but backups of an earlier setting would be
    counted too."""
    logs = sorted(out.glob(f"{Path(AUDIT_LOG).stem}*.log"))
    requests = summarize_audit(_lines(logs))
    for log in logs if not keep_audit else ():
        log.unlink()
    summary = {"cpu_s": sampler.cpu_s, "peak_rss_mib": sampler.peak_rss_mib, "requests": requests}
    (out / SUMMARY).write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))


def read_summary(out: Path) -> dict[str, Any] | None:
    path = out / SUMMARY
    return orjson.loads(path.read_bytes()) if path.exists() else None
