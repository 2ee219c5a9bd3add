"""Tables, ages and -o printers as kubectl prints them."""

from __future__ import annotations

import json

import pytest
import yaml

from webhook.cli import output


@pytest.mark.parametrize(
    ("seconds", "want"),
    [
        pytest.param(-5, "<invalid>", id="clock skew beyond tolerance"),
        pytest.param(-1, "0s", id="tolerated skew"),
        pytest.param(59, "59s", id="seconds"),
        pytest.param(119, "119s", id="seconds up to two minutes"),
        pytest.param(125, "2m5s", id="minutes and seconds"),
        pytest.param(300, "5m", id="whole minutes"),
        pytest.param(3600, "60m", id="minutes up to three hours"),
        pytest.param(7200, "120m", id="two hours in minutes"),
        pytest.param(3 * 3600, "3h", id="hours"),
        pytest.param(3 * 3600 + 60 * 7, "3h7m", id="hours and minutes"),
        pytest.param(30 * 3600, "30h", id="hours up to two days"),
        pytest.param(3 * 86400 + 5 * 3600, "3d5h", id="days and hours"),
        pytest.param(20 * 86400, "20d", id="days"),
        pytest.param(3 * 365 * 86400 + 10 * 86400, "3y10d", id="years and days"),
        pytest.param(9 * 365 * 86400, "9y", id="years"),
    ],
)
def test_human_duration(seconds, want) -> None:
    assert output.human_duration(seconds) == want


def test_render_table_pads_like_kubectl() -> None:
    text = output.render_table(["Name", "Active", "Age"], [["a", True, "1s"], ["longer-name", False, ""]])
    assert text == "NAME          ACTIVE   AGE\na             true     1s\nlonger-name   false\n"


def test_render_table_headers_only() -> None:
    assert output.render_table(["Name", "Age"], []) == "NAME   AGE\n"


OBJ = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "LocalQueue",
    "metadata": {"name": "lq", "namespace": "ns", "managedFields": [{"manager": "x"}]},
    "spec": {"clusterQueue": "cq"},
}


def test_name_printer() -> None:
    got = output.print_objects(
        [OBJ], None, api_version="kueue.x-k8s.io/v1beta2", kind="LocalQueue", operation="created"
    )
    assert got == "localqueue.kueue.x-k8s.io/lq created\n"


def test_json_puts_kind_first_and_drops_managed_fields() -> None:
    got = output.print_objects([OBJ], "json", api_version="kueue.x-k8s.io/v1beta2", kind="LocalQueue")
    assert got.startswith('{\n    "kind": "LocalQueue",\n    "apiVersion": "kueue.x-k8s.io/v1beta2",')
    assert "managedFields" not in json.loads(got)["metadata"]


def test_yaml_list() -> None:
    got = yaml.safe_load(
        output.print_objects([OBJ, OBJ], "yaml", api_version="kueue.x-k8s.io/v1beta2", kind="LocalQueue", as_list=True)
    )
    assert (got["kind"], len(got["items"])) == ("LocalQueueList", 2)
