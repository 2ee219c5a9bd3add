"""The visibility API (VisibilityOnDemand): an aggregated API server every worker process runs.

Upstream's `visibility.kueue.x-k8s.io` (`v1beta2`, `v1beta1`) and our `visibility.pykueue.io`
(`v1alpha1`), served over HTTPS from each process's own watches (`webhook.kube.SharedInformers`),
whether or not it holds the lease. `webhook.worker.process` starts it; nothing here drives admission.

    api.py      the wire format: groups, versions, discovery documents, summaries, Status errors (pure)
    openapi.py  the OpenAPI v2 and v3 documents the aggregator and kubectl read (pure)
    auth.py     front-proxy authentication, SubjectAccessReviews
    handler.py  route, authorize, answer: no sockets, no threads
    server.py   the watches, the pending order and the HTTPS server

Its objects in a cluster (APIServices, Service, RoleBindings, APF) are `webhook.install.visibility`.
"""

from __future__ import annotations

__all__: list[str] = []
