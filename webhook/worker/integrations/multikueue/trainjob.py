"""The MultiKueue adapter of TrainJobs: upstream v0.19.2
`pkg/controller/jobs/trainjob/trainjob_multikueue_adapter.go`, a `CopiedStatusAdapter` (`spec.managedBy`)."""

from __future__ import annotations

from webhook.api.integrations import TRAINJOB
from webhook.worker.integrations.multikueue import CopiedStatusAdapter, MultiKueueAdapter

__all__ = ["ADAPTER"]

ADAPTER: MultiKueueAdapter = CopiedStatusAdapter(TRAINJOB)
