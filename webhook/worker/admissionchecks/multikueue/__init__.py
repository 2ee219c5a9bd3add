"""The `kueue.x-k8s.io/multikueue` admission check (upstream's `pkg/controller/admissionchecks/multikueue`):
a manager cluster dispatches Workloads to worker clusters.

Pure parts over plain objects, split as upstream splits its controllers: `kubeconfig` (where a
MultiKueueCluster's kubeconfig comes from and whether it may be used), `connection` (reconnect
backoff, connection state and the cluster's `Active` condition), `checks` (the AdmissionCheck's
`Active` condition) and `group` (the plan for one Workload and its remote copies). The worker's
reconcilers read the inputs and carry the results out.
"""

__all__: list[str] = []
