"""The pod integration: plain Pods and pod groups (`pkg/controller/jobs/pod`)."""

__all__: list[str] = []
