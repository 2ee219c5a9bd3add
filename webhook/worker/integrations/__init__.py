"""One module (or package) per job integration, named after it: the `GenericJob` adapter and the
reconciler wiring of `batch/v1` Jobs (`batchjob`), plain Pods and pod groups (`pod/`) and
StatefulSets (`statefulset`), over the job framework (`webhook.worker.jobframework`), as
upstream's `pkg/controller/jobs/<integration>`."""
