"""The ConcurrentAdmission variant controller (`pkg/controller/concurrentadmission`): `plan` decides,
`reconciler` queues parents and writes."""

__all__: list[str] = []
