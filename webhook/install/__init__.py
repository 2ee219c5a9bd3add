"""The install: kustomize manifests, the Helm chart, and `make deploy`, generated from the code.

`python -m webhook.install manifests` regenerates manifests/ (with the CRDs from
`webhook.api.schema`) and charts/pykueue; `deploy --image IMG` / `undeploy` apply or remove the
kustomize build with the current kubectl context (`installer`), and `deploy` returns once the
webhooks take a dry-run create.
"""

from __future__ import annotations

__all__: list[str] = []
