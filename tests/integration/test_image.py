"""The image packer (e2e/oci.py) writes archives that containerd and Docker read: the `docker save` layout,
digests that match the bytes, layers with numeric owners and no runtime-mounted contents."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tarfile
from pathlib import Path

E2E_DIR = Path(__file__).resolve().parents[2] / "e2e"
if str(E2E_DIR) not in sys.path:
    sys.path.insert(0, str(E2E_DIR))

import oci  # noqa: E402


def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "opt" / "app").mkdir(parents=True)
    (root / "opt" / "app" / "run.py").write_text("print('hi')\n")
    (root / "proc").mkdir()
    (root / "tmp").mkdir()
    (root / "tmp" / "scratch").write_text("build leftovers")
    os.link(root / "opt" / "app" / "run.py", root / "opt" / "app" / "same.py")
    return root


def test_layer_keeps_runtime_dirs_empty_and_owners_numeric(tmp_path: Path) -> None:
    out = tmp_path / "layer.tar"
    oci.write_layer(tree(tmp_path), out, exclude_contents=("proc", "tmp"))
    with tarfile.open(out) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert {"./opt/app/run.py", "./proc", "./tmp"} <= set(members)
    assert "./tmp/scratch" not in members
    assert members["./opt/app/same.py"].islnk()  # hard links stay links, not copies
    assert all(m.uname == "" and m.gname == "" for m in members.values())


def test_layer_of_chosen_paths_only(tmp_path: Path) -> None:
    out = tmp_path / "layer.tar"
    oci.write_layer(tree(tmp_path), out, paths=("opt",))
    with tarfile.open(out) as tar:
        names = tar.getnames()
    assert names[0] == "./opt" and all(n.startswith("./opt") for n in names)


def test_archive_is_docker_save_layout_with_matching_digests(tmp_path: Path) -> None:
    layer_tar = tmp_path / "layer.tar"
    oci.write_layer(tree(tmp_path), layer_tar)
    layer = oci.Layer.of(layer_tar, "test")
    config = oci.ImageConfig(
        entrypoint=("python",), cmd=("-V",), user="65532:65532", env={"PATH": "/bin"}, exposed_ports=("9443/tcp",)
    )
    image_id = oci.write_archive(tmp_path / "image.tar", tag="pykueue:test", layers=[layer], config=config)

    with tarfile.open(tmp_path / "image.tar") as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        assert manifest[0]["RepoTags"] == ["pykueue:test"]
        raw = tar.extractfile(manifest[0]["Config"]).read()  # type: ignore[union-attr]
        packed = tar.extractfile(manifest[0]["Layers"][0]).read()  # type: ignore[union-attr]
    assert image_id == f"sha256:{hashlib.sha256(raw).hexdigest()}"
    cfg = json.loads(raw)
    assert cfg["rootfs"]["diff_ids"] == [f"sha256:{hashlib.sha256(packed).hexdigest()}"]
    assert cfg["config"]["Entrypoint"] == ["python"]
    assert cfg["config"]["User"] == "65532:65532"
    assert cfg["config"]["ExposedPorts"] == {"9443/tcp": {}}
