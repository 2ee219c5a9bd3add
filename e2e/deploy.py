"""Deploy our image into a cluster whose pods can run it (kind, or a real cluster): `make e2e-kind`.

The real install (`manifests/default`, as `make deploy`): least-privilege RBAC, two replicas that
issue and share their serving certificate through one Secret and inject its CA into the
webhook configurations and CRDs. The image is used as loaded (`imagePullPolicy: IfNotPresent`).

    KUBECONFIG=... python e2e/deploy.py --image pykueue:dev
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from webhook.install.__main__ import deploy  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--image", required=True)
    parser.add_argument("--kubectl", default="kubectl")
    args = parser.parse_args()
    try:
        deploy(args.image, kubectl=args.kubectl, pull_policy="IfNotPresent")
    except subprocess.CalledProcessError as exc:
        print(f"deploy: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
