"""Internal certificate management: the webhook's serving certificate without cert-manager.

Our counterpart of upstream `pkg/util/cert/cert.go` (kueue ff69552e79), which runs
open-policy-agent/cert-controller's rotator. Every replica runs one `CertManager`; they agree
through the one Secret (`internalCertManagement.webhookSecretName` in the Configuration's
namespace), never through leader election:

1. read the Secret; if it is missing, empty, broken, for another DNS name or close to expiry,
   issue a CA (`kueue-ca`, org `kueue`, kept while it stays valid) and a serving certificate for
   `<webhookServiceName>.<namespace>.svc`, and store all four PEMs (`ca.crt`, `ca.key`,
   `tls.crt`, `tls.key`). Create and update race between replicas: a 409 means another replica
   won, so we read back and use its certificate;
2. write `ca.crt`, `tls.crt`, `tls.key` into the cert dir (an emptyDir, not the Secret mounted as
   a volume, so nothing waits for the kubelet's sync); the TLS reloader picks up a change;
3. inject the CA into every webhook of both webhook configurations and into the conversion
   `clientConfig` of each converting CRD, patching only what differs.

`bootstrap` does steps 1 and 2 before the server opens its port (the server cannot start TLS without a
certificate), then a thread repeats 1, 3 and 2, in that order, every `interval` (10 s; every 2 s until
the first injection). Readiness waits for the first injection. Upstream's rotator watches the Secret;
we re-read it as often, so a replica follows a Secret another replica (or a user deleting it to force a
rotation) changed within one interval. All API I/O goes through `webhook.kube` (the `KubeAPI`
protocol), so tests drive this with a fake.

A CA rotation stays seamless across replicas: for `CA_OVERLAP` after a new CA's start, the injected
bundle keeps the CAs it already held (still valid) next to the new one, and a replica injects before
it serves a new certificate. So whichever certificate a replica serves during the switch, the API
server trusts it; after the overlap the old CA is dropped. Serving-certificate rotations keep the CA.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization

import certs
from webhook import kube as k
from webhook.config import Configuration

__all__ = [
    "CA_OVERLAP",
    "ROTATE_BEFORE",
    "BootstrapError",
    "CertManager",
    "KubeAPI",
    "Targets",
    "bootstrap",
    "conversion_crd_names",
    "targets",
    "webhook_configuration_names",
]

log = logging.getLogger(__name__)

#: Issue a new serving certificate (and CA) this long before the current one expires.
ROTATE_BEFORE = timedelta(days=90)
#: How long after a new CA's start the CAs it replaced stay in the injected bundles: longer than a
#: replica takes to re-read the Secret (`interval`) and reload its certificate.
CA_OVERLAP = timedelta(minutes=5)
SERVING_CERT_DAYS = 365
_SERVICE_SUFFIX = "-webhook-service"
_SECRET_KEYS = ("ca.crt", "ca.key", "tls.crt", "tls.key")
_WEBHOOK_CONFIGURATIONS = "/apis/admissionregistration.k8s.io/v1"
_CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


class KubeAPI(Protocol):
    """The part of `webhook.kube.Kube` this module uses."""

    def get(self, path: str, *, timeout: float = 10) -> dict[str, Any] | None: ...

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> dict[str, Any]: ...


class BootstrapError(RuntimeError):
    """No certificate could be put in place before the deadline (the process should exit)."""


def webhook_configuration_names(service_name: str) -> tuple[str, str]:
    """(mutating, validating) names: `<base>-mutating-webhook-configuration`, base = service name less `-webhook-service`."""
    base = service_name.removesuffix(_SERVICE_SUFFIX)
    return f"{base}-mutating-webhook-configuration", f"{base}-validating-webhook-configuration"


def conversion_crd_names() -> tuple[str, ...]:
    """CRDs whose versions convert through our webhook (upstream also lists multikueueclusters)."""
    from webhook.api.schema import KINDS

    return tuple(sorted(kind.crd_name for kind in KINDS if kind.conversion))


@dataclass(frozen=True, slots=True)
class Targets:
    """Where the certificate lives and where its CA must be injected."""

    namespace: str
    secret_name: str
    dns_name: str
    cert_dir: Path
    mutating: str
    validating: str
    crds: tuple[str, ...]

    @property
    def secret_path(self) -> str:
        return k.object_path("v1", "secrets", self.namespace, self.secret_name)


def targets(config: Configuration, cert_dir: str | Path) -> Targets:
    icm = config.internal_cert_management
    mutating, validating = webhook_configuration_names(icm.webhook_service_name)
    return Targets(
        namespace=config.namespace,
        secret_name=icm.webhook_secret_name,
        dns_name=f"{icm.webhook_service_name}.{config.namespace}.svc",
        cert_dir=Path(cert_dir),
        mutating=mutating,
        validating=validating,
        crds=conversion_crd_names(),
    )


@dataclass(frozen=True, slots=True)
class _Bundle:
    ca_crt: bytes
    ca_key: bytes
    tls_crt: bytes
    tls_key: bytes

    def secret_data(self) -> dict[str, str]:
        raw = dict(zip(_SECRET_KEYS, (self.ca_crt, self.ca_key, self.tls_crt, self.tls_key), strict=True))
        return {key: base64.b64encode(value).decode("ascii") for key, value in raw.items()}

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca_crt).decode("ascii")


def _from_secret(secret: Mapping[str, Any]) -> _Bundle | None:
    data = secret.get("data") or {}
    try:
        parts = [base64.b64decode(data[key], validate=True) for key in _SECRET_KEYS]
    except (KeyError, TypeError, ValueError):
        return None
    return _Bundle(*parts)


def _is_usable(bundle: _Bundle, dns_name: str, now: datetime) -> bool:
    """The CA and serving certificate pair up, name `dns_name` and stay valid past `ROTATE_BEFORE`."""
    try:
        ca = certs.load_ca(bundle.ca_crt, bundle.ca_key)
        # load_ca's checks (an ECDSA key that pairs with the certificate) hold for the serving pair too.
        cert = certs.load_ca(bundle.tls_crt, bundle.tls_key).certificate
        cert.verify_directly_issued_by(ca.certificate)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        names = san.get_values_for_type(x509.DNSName)
    except (ValueError, TypeError, x509.ExtensionNotFound, InvalidSignature):
        return False
    return (
        dns_name in names
        and not certs.needs_rotation(bundle.ca_crt, now, before=ROTATE_BEFORE)
        and not certs.needs_rotation(bundle.tls_crt, now, before=ROTATE_BEFORE)
    )


def _issue(previous: _Bundle | None, dns_name: str, now: datetime) -> _Bundle:
    """A new serving certificate, signed by the previous CA while that stays valid, else by a new CA."""
    ca: certs.CA | None = None
    if previous is not None:
        try:
            ca = certs.load_ca(previous.ca_crt, previous.ca_key)
        except ValueError:
            ca = None
        if ca is not None and certs.needs_rotation(previous.ca_crt, now, before=ROTATE_BEFORE):
            ca = None
    if ca is None:
        ca = certs.make_ca(now=now)
    serving = certs.make_serving_cert(ca, [dns_name], days=SERVING_CERT_DAYS, now=now)
    return _Bundle(ca.cert_pem, certs.key_pem(ca.key), serving.cert_pem, serving.key_pem)


def _pem_certificates(pems: bytes) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(pems)
    except ValueError:
        return []


def _ca_bundle(current_ca: bytes, injected_b64: str, now: datetime) -> str:
    """The caBundle to inject: the current CA, then, within `CA_OVERLAP` of its start, the still valid
    CAs `injected_b64` already held (the ones replicas may still serve certificates of)."""
    out = current_ca
    try:
        (current,) = x509.load_pem_x509_certificates(current_ca)
        injected = base64.b64decode(injected_b64 or "", validate=True)
    except ValueError:
        return base64.b64encode(out).decode("ascii")
    if now < current.not_valid_before_utc + certs.tls.CLOCK_SKEW + CA_OVERLAP:
        for cert in _pem_certificates(injected):
            if cert != current and cert.not_valid_after_utc > now:
                out += cert.public_bytes(serialization.Encoding.PEM)
    return base64.b64encode(out).decode("ascii")


def _utcnow() -> datetime:
    return datetime.now(UTC)


class CertManager:
    """One replica's view of the shared certificate; see the module docstring for the steps."""

    def __init__(
        self, kube: KubeAPI, where: Targets, *, clock: Callable[[], datetime] = _utcnow, interval: float = 10.0
    ) -> None:
        self._kube = kube
        self._t = where
        self._clock = clock
        self._interval = interval
        self._injected = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ca_bundle = ""
        self._ca_crt = b""

    # -- step 1 and 2 ------------------------------------------------------------------------
    def ensure_certificate(self) -> bool:
        """Make the Secret hold a usable certificate and write it to the cert dir; True if the files changed."""
        bundle = self._reconcile_secret(self._clock())
        self.ca_bundle, self._ca_crt = bundle.ca_bundle, bundle.ca_crt
        return self._write(bundle)

    def _write(self, bundle: _Bundle) -> bool:
        changed = certs.write_pems(
            self._t.cert_dir, ca_crt=bundle.ca_crt, tls_crt=bundle.tls_crt, tls_key=bundle.tls_key
        )
        if changed:
            log.info("serving certificate written", extra={"dir": str(self._t.cert_dir), "dns_name": self._t.dns_name})
        return changed

    def _reconcile_secret(self, now: datetime) -> _Bundle:
        for _ in range(5):  # each lost race means another replica wrote a usable certificate: re-read it
            secret = self._kube.get(self._t.secret_path)
            current = _from_secret(secret) if secret is not None else None
            if current is not None and _is_usable(current, self._t.dns_name, now):
                return current
            fresh = _issue(current, self._t.dns_name, now)
            try:
                if secret is None:
                    self._create_secret(fresh)
                else:
                    self._update_secret(secret, fresh)
            except k.Conflict:
                log.info(
                    "another replica wrote the certificate Secret first, reading it back",
                    extra={"object": f"{self._t.namespace}/{self._t.secret_name}"},
                )
                continue
            return fresh
        raise k.Conflict(409, "the certificate Secret kept changing under us")

    def _create_secret(self, bundle: _Bundle) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": self._t.secret_name, "namespace": self._t.namespace},
            "data": bundle.secret_data(),
        }
        # 409 AlreadyExists is a Conflict too: another replica created it between our GET and POST.
        self._kube.request("POST", k.object_path("v1", "secrets", self._t.namespace), body=body)
        log.info("certificate Secret created", extra={"object": f"{self._t.namespace}/{self._t.secret_name}"})

    def _update_secret(self, secret: Mapping[str, Any], bundle: _Bundle) -> None:
        # A PUT carrying the resourceVersion we read: a concurrent writer makes it fail with 409.
        body = {**secret, "data": {**(secret.get("data") or {}), **bundle.secret_data()}}
        self._kube.request("PUT", self._t.secret_path, body=body)
        log.info("certificate Secret updated", extra={"object": f"{self._t.namespace}/{self._t.secret_name}"})

    # -- step 3 --------------------------------------------------------------------------------
    def inject(self) -> bool:
        """Put the CA into both webhook configurations and the converting CRDs; True when all carry it."""
        complete = True
        for kind, name in (
            ("mutatingwebhookconfigurations", self._t.mutating),
            ("validatingwebhookconfigurations", self._t.validating),
        ):
            complete &= self._inject_webhooks(f"{_WEBHOOK_CONFIGURATIONS}/{kind}/{name}")
        for name in self._t.crds:
            complete &= self._inject_crd(f"{_CRDS}/{name}")
        if complete and not self._injected.is_set():
            log.info(
                "CA bundle injected",
                extra={"webhook_configurations": [self._t.mutating, self._t.validating], "crds": list(self._t.crds)},
            )
            self._injected.set()
        return complete

    def _inject_webhooks(self, path: str) -> bool:
        obj = self._kube.get(path)
        if obj is None:
            log.info("webhook configuration not found yet", extra={"path": path})
            return False
        ops: list[dict[str, Any]] = []
        now = self._clock()
        for i, hook in enumerate(obj.get("webhooks") or ()):
            injected = (hook.get("clientConfig") or {}).get("caBundle") or ""
            if injected != (want := _ca_bundle(self._ca_crt, injected, now)):
                # `test` pins the index to the webhook we looked at, in case the list changed since.
                ops += [
                    {"op": "test", "path": f"/webhooks/{i}/name", "value": hook.get("name")},
                    {"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": want},
                ]
        if ops:
            self._kube.request("PATCH", path, body=ops, content_type="application/json-patch+json")
        return True

    def _inject_crd(self, path: str) -> bool:
        obj = self._kube.get(path)
        if obj is None:
            log.info("CRD not found yet", extra={"path": path})
            return False
        conversion = (obj.get("spec") or {}).get("conversion") or {}
        if conversion.get("strategy") != "Webhook":
            return True  # nothing calls our webhook for this CRD
        injected = ((conversion.get("webhook") or {}).get("clientConfig") or {}).get("caBundle") or ""
        if injected != (want := _ca_bundle(self._ca_crt, injected, self._clock())):
            patch = {"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": want}}}}}
            self._kube.request("PATCH", path, body=patch, content_type="application/merge-patch+json")
        return True

    # -- the loop ------------------------------------------------------------------------------
    def ready(self) -> bool:
        """The certificate is in the cert dir and the CA was injected at least once."""
        return self._injected.is_set()

    def sync(self) -> bool:
        """Steps 1, 3, 2: the API server trusts a new CA before this replica serves a certificate from it."""
        bundle = self._reconcile_secret(self._clock())
        self.ca_bundle, self._ca_crt = bundle.ca_bundle, bundle.ca_crt
        complete = self.inject()
        if complete or not self._injected.is_set():  # before the first injection nothing calls us yet
            self._write(bundle)
        return complete

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="cert-manager", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        delay = 0.0
        while not self._stop.wait(delay):
            try:
                done = self.sync()
                delay = self._interval if done else 2.0
            except k.KubeError as exc:
                log.warning("certificate sync failed", extra={"status": exc.status, "error": str(exc)})
                delay = min(max(delay, 1.0) * 2, 60.0)


def bootstrap(
    config: Configuration,
    cert_dir: str | Path,
    *,
    ready: Callable[[], bool] = lambda: True,
    kube: KubeAPI | None = None,
    deadline_s: float = 120.0,
) -> Callable[[], bool]:
    """Block until the serving certificate is in `cert_dir`, start the manager; return the combined readiness.

    `ready` is the caller's own readiness; the result is true when that and the CA injection are.
    """
    manager = CertManager(kube if kube is not None else k.Kube(), targets(config, cert_dir))
    stop_at = time.monotonic() + deadline_s
    delay = 0.5
    while True:
        try:
            manager.ensure_certificate()
            break
        except k.KubeError as exc:
            if time.monotonic() + delay > stop_at:
                raise BootstrapError(f"no serving certificate after {deadline_s:.0f}s: {exc}") from exc
            log.warning("certificate bootstrap failed, retrying", extra={"status": exc.status, "error": str(exc)})
            time.sleep(delay)
            delay = min(delay * 2, 10.0)
    manager.start()
    return lambda: manager.ready() and ready()
