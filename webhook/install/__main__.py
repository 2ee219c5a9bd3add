"""`python -m webhook.install manifests|deploy|undeploy`: see the package docstring."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from webhook.api import schema
from webhook.install import chart, kustomize
from webhook.install import objects as o

__all__ = ["deploy", "main", "rendered", "undeploy", "write"]

ROOT = Path(__file__).resolve().parents[2]


def rendered() -> dict[Path, str]:
    """Every generated file, by path relative to the repository root."""
    files = {Path("manifests/crds") / name: text for name, text in schema.render_manifests().items()}
    files.update({Path("manifests") / name: text for name, text in kustomize.render().items()})
    files.update({Path("charts/pykueue") / name: text for name, text in chart.render().items()})
    return files


def write(root: Path) -> list[Path]:
    written = []
    for rel, text in sorted(rendered().items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def _build(kubectl: str, overlay: str) -> list[dict[str, Any]]:
    out = subprocess.run([kubectl, "kustomize", str(ROOT / "manifests" / overlay)], check=True,
                         capture_output=True, text=True).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def _set_image(items: list[dict[str, Any]], image: str, pull_policy: str | None) -> None:
    for item in items:
        if item["kind"] == "Deployment" and item["metadata"]["name"] == o.DEPLOYMENT:
            container = item["spec"]["template"]["spec"]["containers"][0]
            container["image"] = image
            if pull_policy:
                container["imagePullPolicy"] = pull_policy


def deploy(image: str, *, kubectl: str = "kubectl", overlay: str = "default", pull_policy: str | None = None,
           wait: bool = True) -> None:
    """Apply the kustomize build (server-side): CRDs first, then the rest; wait for the rollout."""
    items = _build(kubectl, overlay)
    _set_image(items, image, pull_policy)

    def apply(docs: list[dict[str, Any]]) -> None:
        subprocess.run([kubectl, "apply", "--server-side", "--field-manager=pykueue-install", "--force-conflicts",
                        "-f", "-"], input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}),
                       text=True, check=True)

    crds = [i for i in items if i["kind"] == "CustomResourceDefinition"]
    apply(crds)
    subprocess.run([kubectl, "wait", "--for=condition=Established", "--timeout=60s",
                    *[f"crd/{c['metadata']['name']}" for c in crds]], check=True)
    apply([i for i in items if i["kind"] != "CustomResourceDefinition"])
    if wait:
        namespace = next(i["metadata"]["name"] for i in items if i["kind"] == "Namespace")
        subprocess.run([kubectl, "-n", namespace, "rollout", "status", f"deployment/{o.DEPLOYMENT}",
                        "--timeout=180s"], check=True)


def undeploy(*, kubectl: str = "kubectl", overlay: str = "default") -> None:
    """Delete what `deploy` applied: webhooks first (so nothing calls a vanished server), CRDs last."""
    items = _build(kubectl, overlay)
    order = {"MutatingWebhookConfiguration": 0, "ValidatingWebhookConfiguration": 0, "CustomResourceDefinition": 2}
    for rank in (0, 1, 2):
        docs = [i for i in items if order.get(i["kind"], 1) == rank]
        subprocess.run([kubectl, "delete", "--ignore-not-found", "--wait=false", "-f", "-"],
                       input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}), text=True, check=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m webhook.install", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("manifests", help="regenerate manifests/ and charts/pykueue")
    m.add_argument("--root", type=Path, default=ROOT)
    for name in ("deploy", "undeploy"):
        p = sub.add_parser(name, help=f"{name} with the current kubectl context")
        p.add_argument("--kubectl", default="kubectl")
        p.add_argument("--overlay", default="default", choices=["default", "cert-manager"])
        if name == "deploy":
            p.add_argument("--image", required=True)
            p.add_argument("--pull-policy", choices=["Always", "IfNotPresent", "Never"])
    args = parser.parse_args(argv)
    if args.command == "manifests":
        for path in write(args.root):
            print(path)
        return 0
    try:
        if args.command == "deploy":
            deploy(args.image, kubectl=args.kubectl, overlay=args.overlay, pull_policy=args.pull_policy)
        else:
            undeploy(kubectl=args.kubectl, overlay=args.overlay)
    except subprocess.CalledProcessError as exc:
        print(f"{args.command}: {' '.join(map(str, exc.cmd[:3]))} failed ({exc.returncode})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
