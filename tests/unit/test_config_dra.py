"""`resources.deviceClassMappings` and the DRA feature gates (upstream `validateDeviceClassMappings`
and `validateDRAFeatureGateDependencies` in `pkg/config/validation.go`, v0.19.2)."""

from __future__ import annotations

import pytest

from webhook import config
from webhook.config import ConfigError, DeviceClassMapping
from webhook.worker.manager import dra_settings

V2 = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        config.parse(text)
    return str(info.value)


def test_mappings_are_decoded_and_feed_the_device_class_mapper():
    cfg = config.parse(
        V2
        + "resources:\n  deviceClassMappings:\n"
        + "  - {name: example.com/gpu, deviceClassNames: [gpu.example.com, gpu-b.example.com]}\n"
        + "  - {name: example.com/fpga, deviceClassNames: [fpga.example.com]}\n"
    )
    assert cfg.resources.device_class_mappings[0] == DeviceClassMapping(
        "example.com/gpu", ("gpu.example.com", "gpu-b.example.com")
    )
    mapper = dra_settings(cfg).mapper
    assert dict(mapper.logical) == {
        "gpu.example.com": "example.com/gpu",
        "gpu-b.example.com": "example.com/gpu",
        "fpga.example.com": "example.com/fpga",
    }


_MANY = ", ".join(f"{{name: r{i}, deviceClassNames: [c{i}]}}" for i in range(17))


@pytest.mark.parametrize(
    ("stanza", "message"),
    [
        pytest.param("[{name: 'bad name', deviceClassNames: [gpu]}]",
                     "resources.deviceClassMappings[0].name: Invalid value: \"bad name\": name part must consist of "
                     "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
                     "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                     "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')", id="name not a label key"),
        pytest.param("[{name: gpu, deviceClassNames: []}]",
                     "resources.deviceClassMappings[0].deviceClassNames: Required value: at least one device class "
                     "name is required", id="no device classes"),
        pytest.param("[{name: gpu, deviceClassNames: [a]}, {name: gpu, deviceClassNames: [b]}]",
                     'resources.deviceClassMappings[1].name: Duplicate value: "gpu"', id="resource named twice"),
        pytest.param("[{name: gpu, deviceClassNames: [a, a]}]",
                     'resources.deviceClassMappings[0].deviceClassNames[1]: Duplicate value: "a"',
                     id="class twice in a mapping"),
        pytest.param("[{name: gpu, deviceClassNames: [a]}, {name: tpu, deviceClassNames: [a]}]",
                     'resources.deviceClassMappings[1].deviceClassNames[0]: Invalid value: "a": device class already '
                     "mapped to resource gpu", id="class in two mappings"),
        pytest.param("[{name: gpu, deviceClassNames: [a, b, c, d, e, f, g, h, i]}]",
                     "resources.deviceClassMappings[0].deviceClassNames: Too many: 9: must have at most 8 items",
                     id="too many classes"),
        pytest.param(f"[{_MANY}]",
                     "resources.deviceClassMappings: Too many: 17: must have at most 16 items", id="too many mappings"),
        pytest.param("[{name: gpu, deviceClassNames: [a], sources: [{}]}]",
                     "resources.deviceClassMappings[0].sources[0]: Required value: exactly one source type must be "
                     "set per entry", id="empty source"),
    ],
)  # fmt: skip
def test_mapping_validation_messages(stanza: str, message: str):
    assert error_of(V2 + f"resources: {{deviceClassMappings: {stanza}}}\n") == message


def test_capacity_sources_need_their_gate():
    stanza = "[{name: gpu, deviceClassNames: [a], sources: [{capacity: {driver: d}}]}]"
    assert error_of(V2 + f"resources: {{deviceClassMappings: {stanza}}}\n") == (
        "resources.deviceClassMappings[0].sources[0].capacity: Invalid value: true: capacity sources require "
        "KueueDRAIntegrationConsumableCapacity to be enabled"
    )


def test_sub_gates_require_the_integration():
    assert error_of(V2 + "featureGates: {KueueDRAIntegration: false}\n") == (
        '[featureGates: Invalid value: "KueueDRAIntegrationExtendedResource": KueueDRAIntegrationExtendedResource '
        'requires KueueDRAIntegration to be enabled, featureGates: Invalid value: "KueueDRAIntegrationPartitionable'
        'Devices": KueueDRAIntegrationPartitionableDevices requires KueueDRAIntegration to be enabled]'
    )


def test_the_integration_can_be_turned_off_with_its_sub_gates():
    cfg = config.parse(
        V2
        + "featureGates: {KueueDRAIntegration: false, KueueDRAIntegrationExtendedResource: false, "
        + "KueueDRAIntegrationPartitionableDevices: false}\n"
    )
    config.check_implemented(cfg)  # counters are refused anyway, so the gate's value changes nothing
    assert not dra_settings(cfg).enabled
    assert dra_settings(cfg).reject_when_disabled


# -- what is refused at start (`check_implemented`) ------------------------------------------------------


@pytest.mark.parametrize(
    ("gates", "message"),
    [
        pytest.param("{KueueDRAIntegrationConsumableCapacity: true}",
                     "featureGates: KueueDRAIntegrationConsumableCapacity=true is not implemented by pykueue (only "
                     "its default, false, is accepted)", id="consumable capacity"),
    ],
)  # fmt: skip
def test_unimplemented_sub_gates_are_refused_at_start(gates: str, message: str):
    cfg = config.parse(V2 + f"featureGates: {gates}\n")
    with pytest.raises(ConfigError) as info:
        config.check_implemented(cfg)
    assert str(info.value) == message


def test_default_sub_gates_are_accepted():
    config.check_implemented(config.parse(V2 + "featureGates: {KueueDRAIntegrationPartitionableDevices: true}\n"))


def test_counter_sources_are_refused_at_start():
    stanza = "[{name: gpu, deviceClassNames: [a], sources: [{counter: {name: memory, driver: d}}]}]"
    cfg = config.parse(V2 + f"resources: {{deviceClassMappings: {stanza}}}\n")
    with pytest.raises(ConfigError) as info:
        config.check_implemented(cfg)
    assert str(info.value) == (
        "resources.deviceClassMappings[0].sources: counter and capacity sources are not implemented by pykueue; "
        "devices are counted per DeviceClass only (leave sources unset)"
    )
