"""The MultiKueue adapters of Kubeflow's jobs, one per kind: upstream v0.19.2
`pkg/controller/jobs/mpijob/mpijob_multikueue_adapter.go` and
`pkg/controller/jobs/kubeflow/kubeflowjob/kubeflowjob_multikueue_adapter.go` (PyTorchJob, TFJob,
PaddleJob, XGBoostJob, JAXJob): `CopiedStatusAdapter`s whose `managedBy` is in `spec.runPolicy`.
The registry names each as `webhook.worker.integrations.multikueue.kubeflow:<KIND>`."""

from __future__ import annotations

from webhook.api import integrations as i
from webhook.worker.integrations.multikueue import CopiedStatusAdapter, MultiKueueAdapter

__all__ = ["JAXJOB", "MPIJOB", "PADDLEJOB", "PYTORCHJOB", "TFJOB", "XGBOOSTJOB"]

_RUN_POLICY = ("spec", "runPolicy")
MPIJOB: MultiKueueAdapter = CopiedStatusAdapter(i.MPIJOB, _RUN_POLICY)
PYTORCHJOB: MultiKueueAdapter = CopiedStatusAdapter(i.PYTORCHJOB, _RUN_POLICY)
TFJOB: MultiKueueAdapter = CopiedStatusAdapter(i.TFJOB, _RUN_POLICY)
PADDLEJOB: MultiKueueAdapter = CopiedStatusAdapter(i.PADDLEJOB, _RUN_POLICY)
XGBOOSTJOB: MultiKueueAdapter = CopiedStatusAdapter(i.XGBOOSTJOB, _RUN_POLICY)
JAXJOB: MultiKueueAdapter = CopiedStatusAdapter(i.JAXJOB, _RUN_POLICY)
