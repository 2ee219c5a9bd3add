"""The command line: a bad Configuration stops the start with the field path; certs writes a bundle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "webhook", *args], capture_output=True, text=True, timeout=60)


def test_bad_configuration_stops_the_start_naming_the_field(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "integrations:\n  frameworks: [batch/job, no-such-framework]\n"
    )
    proc = run("serve", "--cert-dir", str(tmp_path), "--config", str(config))
    assert proc.returncode == 2
    assert 'integrations.frameworks[1]: Unsupported value: "no-such-framework"' in proc.stderr


def test_a_framework_we_do_not_implement_stops_serve_and_the_worker(tmp_path: Path) -> None:
    """Upstream accepts these names; running without them would leave those workloads outside every quota."""
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "integrations:\n  frameworks: [batch/job, deployment, pod, jobset.x-k8s.io/jobset, ray.io/rayjob]\n"
    )
    for command in (["serve", "--cert-dir", str(tmp_path)], ["worker", "--kubeconfig", str(tmp_path / "none")]):
        proc = run(*command, "--config", str(config))
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().splitlines()[-1] == (
            f'invalid configuration {config}: integrations.frameworks: "jobset.x-k8s.io/jobset", "ray.io/rayjob" are '
            "not implemented by pykueue; their workloads would run outside every quota "
            '(implemented: "batch/job", "deployment", "pod", "statefulset")'
        )


def test_missing_certificates_stop_the_start(tmp_path: Path) -> None:
    proc = run("serve", "--cert-dir", str(tmp_path / "absent"))
    assert proc.returncode == 2 and "cannot load tls.crt/tls.key" in proc.stderr


def test_certs_writes_the_bundle_and_prints_the_ca_bundle(tmp_path: Path) -> None:
    proc = run("certs", "--out", str(tmp_path), "--host", "127.0.0.1", "--host", "webhook.example")
    assert proc.returncode == 0
    assert {p.name for p in tmp_path.iterdir()} >= {"ca.crt", "tls.crt", "tls.key"}
    import base64

    assert base64.b64decode(proc.stdout.strip().splitlines()[-1]) == (tmp_path / "ca.crt").read_bytes()
