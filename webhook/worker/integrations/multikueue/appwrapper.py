"""The MultiKueue adapter of AppWrappers: upstream v0.19.2
`pkg/controller/jobs/appwrapper/appwrapper_multikueue_adapter.go`, a `CopiedStatusAdapter` (`spec.managedBy`)."""

from __future__ import annotations

from webhook.api.integrations import APPWRAPPER
from webhook.worker.integrations.multikueue import CopiedStatusAdapter, MultiKueueAdapter

__all__ = ["ADAPTER"]

ADAPTER: MultiKueueAdapter = CopiedStatusAdapter(APPWRAPPER)
