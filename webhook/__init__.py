"""Kueue-compatible job queueing and quota for Kubernetes.

Two components share this package: the stateless admission webhook server
(`webhook.admission`) and the leader-elected admission worker (`webhook.worker`),
both built on the Kueue API model (`webhook.api`) and, for the worker, the pure
admission core (`webhook.core`).
"""
