"""The command line: a bad Configuration stops the start with the field path; certs writes a bundle."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from webhook import __main__ as entry
from webhook import logs
from webhook.config import Feature


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


def test_spark_application_without_its_alpha_gate_stops_serve_and_the_worker(tmp_path: Path) -> None:
    """As upstream's manager (`CanSupportIntegration`): the framework runs only with
    SparkApplicationIntegration on. (Every other framework upstream knows is implemented; naming one
    we lack is refused as tests/unit/test_config_support.py pins.)"""
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "integrations:\n  frameworks: [batch/job, deployment, pod, sparkoperator.k8s.io/sparkapplication]\n"
    )
    for command in (["serve", "--cert-dir", str(tmp_path)], ["worker", "--kubeconfig", str(tmp_path / "none")]):
        proc = run(*command, "--config", str(config))
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().splitlines()[-1] == (
            f"invalid configuration {config}: failed to configure reconcilers: sparkoperator.k8s.io/sparkapplication "
            "integration is alpha feature. please enable SparkApplicationIntegration featuregate"
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


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """`_configure` sets up the root logger, as a start does; put pytest's back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:], root.level = handlers, level


def test_feature_gates_and_zap_log_level_reach_serve_and_its_worker(restore_logging: None) -> None:
    """The chart's `--feature-gates`/`--zap-log-level` args: serve applies them, and hands both to the worker
    process it starts, which applies them the same way (cmd/kueue/main.go)."""
    serve = entry._parser().parse_args(
        ["serve", "--in-cluster", "--feature-gates=ShortWorkloadNames=true,PartialAdmission=false", "--zap-log-level=2"]
    )
    worker = entry._parser().parse_args(["worker", *entry._worker_argv(serve)])
    for args in (serve, worker):
        cfg = entry._configure(args)
        assert cfg is not None
        assert cfg.feature_enabled(Feature.SHORT_WORKLOAD_NAMES)
        assert not cfg.feature_enabled(Feature.PARTIAL_ADMISSION)
        assert logging.getLogger().level == logging.INFO - 2  # V(2): our info lines, not our debug lines
        assert not logging.getLogger("webhook").isEnabledFor(logging.DEBUG)


def test_bad_feature_gates_stop_serve_and_the_worker(tmp_path: Path) -> None:
    """As upstream's manager exits on `conflicting feature gates detected`."""
    for command in (["serve", "--cert-dir", str(tmp_path)], ["worker", "--kubeconfig", str(tmp_path / "none")]):
        proc = run(*command, "--feature-gates=PartialAdmission=true,NoSuchGate=true")
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().splitlines()[-1] == (
            "invalid configuration (defaults) with --feature-gates=PartialAdmission=true,NoSuchGate=true: "
            'featureGates: Invalid value: "PartialAdmission=true,NoSuchGate=true": unrecognized feature gate: NoSuchGate'
        )


def test_a_bad_zap_log_level_is_refused() -> None:
    proc = run("serve", "--zap-log-level=0")
    assert proc.returncode == 2
    assert 'argument --zap-log-level: invalid log level "0"' in proc.stderr
    proc = run("worker", "--zap-log-level=info", "--log-level=DEBUG")
    assert proc.returncode == 2
    assert "argument --log-level: not allowed with argument --zap-log-level" in proc.stderr


@pytest.mark.parametrize(
    ("value", "level"),
    [
        ("info", logging.INFO),
        ("INFO", logging.INFO),
        ("debug", logging.INFO - 1),  # zap's debug is logr's V(1)
        ("error", logging.ERROR),
        ("panic", logging.CRITICAL),
        ("1", logging.INFO - 1),
        ("2", logging.INFO - 2),  # upstream chart's default
        ("10", logging.DEBUG),
        ("99", logging.NOTSET),
    ],
)
def test_zap_log_level_maps_onto_python_levels(value: str, level: int) -> None:
    assert logs.zap_level(value) == level


@pytest.mark.parametrize("value", ["0", "-1", "warn", "", "2.5"])
def test_zap_log_level_refuses_what_controller_runtime_refuses(value: str) -> None:
    with pytest.raises(ValueError, match=f'^invalid log level "{value}"$'):
        logs.zap_level(value)


def test_a_taken_health_probe_address_stops_serve(tmp_path: Path) -> None:
    """As upstream's manager, which cannot start without its probe listener."""
    import socket

    import certs

    certs.write_bundle(tmp_path, ["127.0.0.1"])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        config = tmp_path / "config.yaml"
        config.write_text(
            "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
            f"health: {{healthProbeBindAddress: '{address}'}}\n"
        )
        proc = run("serve", "--cert-dir", str(tmp_path), "--port", "0", "--config", str(config))
    assert proc.returncode == 2
    assert f"cannot serve health probes on {address}" in proc.stderr
