"""What the CLI asks of the API server: Kueue paths, paged lists, resource discovery, the visibility API.

Everything goes through one method, `Api.request` (fulfilled by `webhook.kube.Kube`; unit tests pass a
fake), so the commands never see the Kubernetes client. Mirrors what upstream's kueuectl gets from its
clientsets, REST mapper and resource builder (cmd/kueuectl/app/clientgetter, list/helpers.go).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from webhook import kube
from webhook.api import constants
from webhook.visibility.api import PYKUEUE_GROUP, PYKUEUE_VERSION

__all__ = [
    "KIND_INFO",
    "Api",
    "CliError",
    "KindInfo",
    "Resource",
    "get_object",
    "kueue_path",
    "list_items",
    "list_request_limit",
    "local_queue_estimates",
    "pending_workloads",
    "resolve_resource",
    "resources_for",
]

#: Environment variable that sets the page size of list requests (upstream's name and default).
LIST_LIMIT_ENV = "KUEUECTL_LIST_REQUEST_LIMIT"
_DEFAULT_LIST_LIMIT = 100
_DISCOVERY_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"


class CliError(Exception):
    """A failure the user can act on: printed as one `Error: …` line, exit status 1."""


class Api(Protocol):
    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        accept: str = "application/json",
        timeout: float = 30,
    ) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class KindInfo:
    """A Kueue kind as the CLI names it: `plural.kueue.x-k8s.io` is what kubectl is handed."""

    kind: str
    plural: str
    namespaced: bool

    @property
    def qualified(self) -> str:
        return f"{self.plural}.{constants.GROUP}"


KIND_INFO: Mapping[str, KindInfo] = {
    "workload": KindInfo("Workload", "workloads", True),
    "clusterqueue": KindInfo("ClusterQueue", "clusterqueues", False),
    "localqueue": KindInfo("LocalQueue", "localqueues", True),
    "resourceflavor": KindInfo("ResourceFlavor", "resourceflavors", False),
}


def kueue_path(kind: str, namespace: str | None = None, name: str | None = None) -> str:
    """REST path of a Kueue v1beta2 collection or object; `namespace` None lists across namespaces."""
    info = KIND_INFO[kind]
    return kube.object_path(constants.V1BETA2, info.plural, namespace if info.namespaced else None, name)


def list_request_limit() -> int:
    raw = os.environ.get(LIST_LIMIT_ENV, "")
    if not raw:
        return _DEFAULT_LIST_LIMIT
    try:
        return int(raw)
    except ValueError:
        raise CliError("invalid list request limit") from None


def list_items(
    api: Api, path: str, *, label_selector: str = "", field_selector: str = "", accept: str = "application/json"
) -> dict[str, Any]:
    """Every page of a list request, as one list object (the last page's metadata, all items).

    A server-side Table (`accept`) is paged the same way; its rows take the place of items.
    """
    query: dict[str, Any] = {"limit": list_request_limit()}
    if label_selector:
        query["labelSelector"] = label_selector
    if field_selector:
        query["fieldSelector"] = field_selector
    key = "rows" if "as=Table" in accept else "items"
    collected: list[Any] = []
    while True:
        page = api.request("GET", path, query=query, accept=accept)
        collected.extend(page.get(key) or [])
        cont = (page.get("metadata") or {}).get("continue")
        if not cont:
            page[key] = collected
            return page
        query["continue"] = cont


def get_object(api: Api, path: str) -> dict[str, Any] | None:
    try:
        return api.request("GET", path)
    except kube.NotFound:
        return None


def pending_workloads(api: Api, cluster_queue: str) -> list[dict[str, Any]] | None:
    """The visibility API's pending workloads of a ClusterQueue; None when the API (or the queue) is absent."""
    path = f"/apis/visibility.{constants.GROUP}/v1beta2/clusterqueues/{cluster_queue}/pendingworkloads"
    try:
        return list(api.request("GET", path).get("items") or [])
    except kube.NotFound:
        return None


def local_queue_estimates(api: Api, namespace: str, local_queue: str) -> dict[str, Any] | None:
    """Our `visibility.pykueue.io` page of a LocalQueue's pending workloads with estimated admissions;
    None when it is not served, the LocalQueue is unknown, or the caller may not read it (a
    namespace's user usually may: `kueue-batch-user-role`)."""
    path = f"/apis/{PYKUEUE_GROUP}/{PYKUEUE_VERSION}/namespaces/{namespace}/localqueues/{local_queue}/pendingworkloads"
    try:
        return api.request("GET", path)
    except kube.KubeError as exc:
        if isinstance(exc, kube.NotFound) or exc.status in (401, 403, 503):
            return None
        raise


# --------------------------------------------------------------------------- discovery


@dataclass(frozen=True, slots=True)
class Resource:
    """One API resource, as discovery describes it."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    #: the entry's own `group` field, which servers fill only where it differs from its list's
    listed_group: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None, name: str | None = None) -> str:
        return kube.object_path(self.api_version, self.plural, namespace if self.namespaced else None, name)

    def names(self) -> set[str]:
        return {self.plural, self.singular, self.kind.lower(), *self.short_names}


def _resource(group: str, version: str, raw: Mapping[str, Any]) -> Resource:
    return Resource(
        group,
        version,
        raw.get("name") or raw.get("resource") or "",
        raw.get("singularName") or raw.get("singularResource") or "",
        raw.get("kind") or (raw.get("responseKind") or {}).get("kind", ""),
        bool(raw.get("namespaced", raw.get("scope") == "Namespaced")),
        tuple(raw.get("shortNames") or ()),
        raw.get("group") or "",
    )


def resources_for(api: Api, api_version: str) -> list[Resource] | None:
    """The resources of one group/version (legacy discovery); None when the server does not serve it."""
    group, _, version = api_version.rpartition("/")
    path = f"/apis/{api_version}" if group else f"/api/{api_version}"
    try:
        doc = api.request("GET", path)
    except kube.NotFound:
        return None
    return [_resource(group, version, r) for r in doc.get("resources") or [] if "/" not in r.get("name", "")]


def _all_preferred(api: Api) -> Iterable[Resource]:
    """Every resource at its group's preferred version: aggregated discovery in one request when served."""
    core = resources_for(api, "v1") or []
    yield from core
    doc = api.request("GET", "/apis", accept=_DISCOVERY_V2)
    if doc.get("kind") == "APIGroupDiscoveryList":
        for group in doc.get("items") or []:
            versions = group.get("versions") or []
            if versions:
                name = (group.get("metadata") or {}).get("name", "")
                for r in versions[0].get("resources") or []:
                    yield _resource(name, versions[0].get("version", ""), r)
        return
    for group in doc.get("groups") or []:
        preferred = (group.get("preferredVersion") or {}).get("groupVersion")
        if preferred:
            yield from resources_for(api, preferred) or []


def resolve_resource(api: Api, arg: str) -> Resource:
    """`TYPE[.VERSION][.GROUP]` as kubectl resolves it: plural, singular, kind or short name, group suffix optional."""
    name, _, rest = arg.lower().partition(".")
    matches = []
    for res in _all_preferred(api):
        if name not in res.names():
            continue
        if rest and rest not in (res.group, f"{res.version}.{res.group}"):
            continue
        matches.append(res)
    if not matches:
        raise CliError(f'the server doesn\'t have a resource type "{name}"')
    return matches[0]
