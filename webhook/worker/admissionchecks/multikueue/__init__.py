"""The `kueue.x-k8s.io/multikueue` admission check (upstream's `pkg/controller/admissionchecks/multikueue`)."""

__all__: list[str] = []
