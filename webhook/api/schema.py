"""CustomResourceDefinitions of the Kueue API, generated from one Python definition.

Owns what upstream generates with controller-gen into `config/components/crd/bases/*.yaml` and
patches with `config/components/crd/patches/webhook_in_*.yaml` (kueue at ff69552e79): names, short
names, scope, versions (v1beta1 served and deprecated, v1beta2 served and stored), the status
subresource, printer columns, selectable fields, conversion, and the OpenAPI schemas built in
`schema_kinds` / `schema_workload` (Kueue types) and `schema_pod` (PodTemplateSpec).

    python -m webhook.api.schema manifests/crds

writes one `kueue.x-k8s.io_<plural>.yaml` per kind plus a `kustomization.yaml`. Installers call
`crds(ca_bundle, service=... | url=...)` to point the conversion webhook at the running server.

Generating the Workload CRD imports the `kubernetes` client (lazily, in `schema_pod`); nothing in
this module does so at import time.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from webhook.api import schema_budget, schema_pod, schema_usage, schema_workload
from webhook.api import schema_kinds as kinds
from webhook.api import schema_types as t

__all__ = [
    "DEFAULT_SERVICE",
    "GROUP",
    "KINDS",
    "Kind",
    "PrinterColumn",
    "ServiceRef",
    "crds",
    "dump",
    "main",
    "render_manifests",
    "write_manifests",
]

GROUP = "kueue.x-k8s.io"
STORAGE_VERSION = "v1beta2"
DEPRECATION_WARNING = "This version is deprecated. Use v1beta2 instead."


@dataclasses.dataclass(frozen=True, slots=True)
class ServiceRef:
    """Where the API server sends ConversionReviews when the webhook runs in the cluster."""

    name: str
    namespace: str
    path: str = "/convert"
    port: int | None = None


DEFAULT_SERVICE = ServiceRef(name="kueue-webhook-service", namespace="kueue-system")


@dataclasses.dataclass(frozen=True, slots=True)
class PrinterColumn:
    """One `additionalPrinterColumns` entry (`+kubebuilder:printcolumn`)."""

    name: str
    type: str
    json_path: str
    description: str
    priority: int = 0

    def to_dict(self) -> dict[str, Any]:
        column: dict[str, Any] = {
            "name": self.name,
            "type": self.type,
            "jsonPath": self.json_path,
            "description": self.description,
        }
        if self.priority:
            column["priority"] = self.priority
        return column


@dataclasses.dataclass(frozen=True, slots=True)
class Kind:
    """One Kueue kind: names, scope and how to build its schema for a version.

    The defaults are what most kinds are (cluster-scoped, no status subresource, no conversion), so
    an entry of `KINDS` names only what sets its kind apart.
    """

    kind: str
    plural: str
    short_names: tuple[str, ...]
    schema: Callable[[str], t.Schema]
    scope: str = "Cluster"
    status: bool = False
    conversion: bool = False
    columns: dict[str, tuple[PrinterColumn, ...]] = dataclasses.field(default_factory=dict)
    selectable_fields: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    # Upstream marks every older version deprecated except MultiKueueConfig's.
    deprecated_old_versions: bool = True

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{GROUP}"


def _same_columns(*columns: PrinterColumn) -> dict[str, tuple[PrinterColumn, ...]]:
    return {version: columns for version in kinds.VERSIONS}


def _pending() -> PrinterColumn:
    return PrinterColumn("Pending Workloads", "integer", ".status.pendingWorkloads", "Workloads waiting for admission")


def _admitted(priority: int = 0) -> PrinterColumn:
    return PrinterColumn(
        "Admitted Workloads",
        "integer",
        ".status.admittedWorkloads",
        "Admitted workloads that are still running",
        priority=priority,
    )


def _condition(name: str, condition_type: str, description: str) -> PrinterColumn:
    """One condition's status; the condition columns differ only in which condition and their words."""
    return PrinterColumn(name, "string", f".status.conditions[?(@.type=='{condition_type}')].status", description)


def _age() -> PrinterColumn:
    return PrinterColumn("Age", "date", ".metadata.creationTimestamp", "Time since creation")


def _cluster_queue_columns(cohort_path: str) -> tuple[PrinterColumn, ...]:
    return (
        PrinterColumn("Cohort", "string", cohort_path, "Cohort the ClusterQueue shares quota with"),
        PrinterColumn("Strategy", "string", ".spec.queueingStrategy", "Queueing strategy", priority=1),
        _pending(),
        _admitted(priority=1),
    )


def _workload_columns() -> tuple[PrinterColumn, ...]:
    return (
        PrinterColumn("Queue", "string", ".spec.queueName", "LocalQueue the workload was submitted to"),
        PrinterColumn(
            "Reserved in",
            "string",
            ".status.admission.clusterQueue",
            "ClusterQueue holding the quota reservation",
        ),
        _condition("Admitted", "Admitted", "Whether the workload is admitted"),
        _condition("Finished", "Finished", "Whether the workload finished"),
        _age(),
    )


def _workload(version: str) -> t.Schema:
    template = schema_pod.pod_template_schema("Pod template of the pods in this set.")
    return schema_workload.workload_schema(version, template)


KINDS: tuple[Kind, ...] = (
    Kind("AdmissionCheck", "admissionchecks", ("ac",), kinds.admission_check_schema, status=True),
    Kind(
        "ClusterQueue",
        "clusterqueues",
        ("cq",),
        kinds.cluster_queue_schema,
        status=True,
        conversion=True,
        columns={
            "v1beta1": _cluster_queue_columns(".spec.cohort"),
            "v1beta2": _cluster_queue_columns(".spec.cohortName"),
        },
    ),
    Kind("Cohort", "cohorts", ("co",), kinds.cohort_schema, status=True, conversion=True),
    Kind(
        "LocalQueue",
        "localqueues",
        ("queue", "queues", "lq"),
        kinds.local_queue_schema,
        scope="Namespaced",
        status=True,
        conversion=True,
        columns=_same_columns(
            PrinterColumn("ClusterQueue", "string", ".spec.clusterQueue", "ClusterQueue the queue points to"),
            _pending(),
            _admitted(),
        ),
    ),
    Kind(
        "MultiKueueCluster",
        "multikueueclusters",
        ("mkc",),
        kinds.multikueue_cluster_schema,
        status=True,
        conversion=True,
        columns=_same_columns(_condition("Connected", "Active", "Whether the cluster is connected"), _age()),
    ),
    Kind(
        "MultiKueueConfig",
        "multikueueconfigs",
        ("mkconf",),
        kinds.multikueue_config_schema,
        deprecated_old_versions=False,
    ),
    Kind("ProvisioningRequestConfig", "provisioningrequestconfigs", ("prc",), kinds.provisioning_request_config_schema),
    Kind("ResourceFlavor", "resourceflavors", ("flavor", "flavors", "rf"), kinds.resource_flavor_schema),
    Kind("Topology", "topologies", ("topo",), kinds.topology_schema),
    Kind(
        "Workload",
        "workloads",
        ("kwl", "kueueworkload", "kueueworkloads"),
        _workload,
        scope="Namespaced",
        status=True,
        conversion=True,
        columns=_same_columns(*_workload_columns()),
        selectable_fields={"v1beta2": (".status.admission.clusterQueue",)},
    ),
    Kind(
        "WorkloadPriorityClass",
        "workloadpriorityclasses",
        ("wpc",),
        kinds.workload_priority_class_schema,
        columns=_same_columns(PrinterColumn("Value", "integer", ".value", "Priority value of the class")),
    ),
)


def _version(kind: Kind, version: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": version,
        "served": True,
        "storage": version == STORAGE_VERSION,
        "schema": {"openAPIV3Schema": kind.schema(version)},
    }
    if version != STORAGE_VERSION and kind.deprecated_old_versions:
        entry["deprecated"] = True
        entry["deprecationWarning"] = DEPRECATION_WARNING
    if kind.status:
        entry["subresources"] = {"status": {}}
    elif kind.columns:
        # controller-gen emits an empty block for kinds with printer columns but no status
        entry["subresources"] = {}
    if columns := kind.columns.get(version):
        entry["additionalPrinterColumns"] = [c.to_dict() for c in columns]
    if fields := kind.selectable_fields.get(version):
        entry["selectableFields"] = [{"jsonPath": path} for path in fields]
    return entry


def _conversion(ca_bundle: str | None, service: ServiceRef | None, url: str | None) -> dict[str, Any]:
    client_config: dict[str, Any]
    if url is not None:
        client_config = {"url": url}
    else:
        svc = service or DEFAULT_SERVICE
        ref: dict[str, Any] = {"name": svc.name, "namespace": svc.namespace, "path": svc.path}
        if svc.port is not None:
            ref["port"] = svc.port
        client_config = {"service": ref}
    if ca_bundle:
        client_config["caBundle"] = ca_bundle
    return {
        "strategy": "Webhook",
        "webhook": {"clientConfig": client_config, "conversionReviewVersions": ["v1"]},
    }


def crd(
    kind: Kind, ca_bundle: str | None = None, *, service: ServiceRef | None = None, url: str | None = None
) -> dict[str, Any]:
    """The CustomResourceDefinition of one kind (see `crds`)."""
    spec: dict[str, Any] = {
        "group": GROUP,
        "names": {
            "kind": kind.kind,
            "listKind": f"{kind.kind}List",
            "plural": kind.plural,
            "singular": kind.singular,
            "shortNames": list(kind.short_names),
        },
        "scope": kind.scope,
        "versions": [_version(kind, version) for version in kinds.VERSIONS],
    }
    if kind.conversion:
        spec["conversion"] = _conversion(ca_bundle, service, url)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": kind.crd_name},
        "spec": spec,
    }


def crds(
    ca_bundle: str | None = None, *, service: ServiceRef | None = None, url: str | None = None
) -> list[dict[str, Any]]:
    """All Kueue CRDs, ordered by plural, then ours (`schema_usage`, `schema_budget`: group `pykueue.io`).

    ClusterQueue, LocalQueue, Cohort and Workload convert between versions through the webhook.
    By default the API server reaches it through `DEFAULT_SERVICE` (kueue-webhook-service in
    kueue-system, path /convert); pass `service=ServiceRef(...)` for another Service or
    `url="https://127.0.0.1:9443/convert"` for a webhook outside the cluster. `ca_bundle` is the
    base64-encoded PEM bundle that signs the webhook's serving certificate; without it the
    `caBundle` field is left out (installers inject it later).
    """
    if service is not None and url is not None:
        raise ValueError("give either service or url, not both")
    return [
        *(crd(kind, ca_bundle, service=service, url=url) for kind in KINDS),
        schema_usage.crd(),
        schema_budget.crd(),
    ]


class _Dumper(yaml.SafeDumper):
    """Plain block YAML, never anchors/aliases (schemas share nothing, but be sure)."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str_presenter)


def dump(document: Any) -> str:
    """YAML text of one document, keys sorted, as committed under manifests/crds."""
    text: str = yaml.dump(document, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=120)
    return "---\n" + text


def file_name(definition: dict[str, Any]) -> str:
    spec = definition["spec"]
    return f"{spec['group']}_{spec['names']['plural']}.yaml"


def render_manifests() -> dict[str, str]:
    """File name → content of everything `write_manifests` writes."""
    files = {file_name(definition): dump(definition) for definition in crds()}
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": sorted(files),
    }
    files["kustomization.yaml"] = dump(kustomization)
    return files


def write_manifests(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in sorted(render_manifests().items()):
        path = directory / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m webhook.api.schema", description="Write the Kueue CRD manifests.")
    parser.add_argument("directory", type=Path, help="where to write the CRD manifests (e.g. manifests/crds)")
    args = parser.parse_args(argv)
    for path in write_manifests(args.directory):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
