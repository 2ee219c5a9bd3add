"""`python -m webhook.install manifests|deploy|undeploy`: see the package docstring."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from webhook.api import schema
from webhook.install import chart, installer, kustomize

__all__ = ["main", "rendered", "write"]

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
            p.add_argument(
                "--timeout",
                type=float,
                default=installer.AVAILABILITY_TIMEOUT_S,
                help="seconds for the rollout and the webhooks to take a dry-run create",
            )
    args = parser.parse_args(argv)
    if args.command == "manifests":
        for path in write(args.root):
            print(path)
        return 0
    try:
        if args.command == "deploy":
            installer.deploy(
                args.image,
                kubectl=args.kubectl,
                overlay=args.overlay,
                pull_policy=args.pull_policy,
                timeout_s=args.timeout,
            )
        else:
            installer.undeploy(kubectl=args.kubectl, overlay=args.overlay)
    except subprocess.CalledProcessError as exc:
        print(f"{args.command}: {' '.join(map(str, exc.cmd[:3]))} failed ({exc.returncode})", file=sys.stderr)
        return 1
    except installer.DeployError as exc:
        print(f"{args.command}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
