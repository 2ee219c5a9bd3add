"""The MultiKueue adapter of JobSets: upstream v0.19.2
`pkg/controller/jobs/jobset/jobset_multikueue_adapter.go`, a `CopiedStatusAdapter` (`spec.managedBy`)."""

from __future__ import annotations

from webhook.api.integrations import JOBSET
from webhook.worker.integrations.multikueue import CopiedStatusAdapter, MultiKueueAdapter

__all__ = ["ADAPTER"]

ADAPTER: MultiKueueAdapter = CopiedStatusAdapter(JOBSET)
