"""One module per job integration, named after it: the `GenericJob` adapter and the reconciler
wiring of `batch/v1` Jobs (`batchjob`), plain Pods and pod groups (`pod`, with `pod_reconciler`
and its `pod_*` helpers) and StatefulSets (`statefulset`), over the job framework
(`webhook.worker.jobframework`), as upstream's `pkg/controller/jobs/<integration>`."""
