from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from kernel_mcp.hardware import devices
from kernel_mcp.hardware.devices import (FLOP_KEYS, TABLE, Ceilings, MiB, dtype_unit, fastest_peak, lookup,
                                         present_device)


def by_name(name: str) -> Ceilings:
    (entry,) = [c for c in TABLE if c.name == name]
    return entry


def test_table_has_the_required_parts():
    names = {c.name for c in TABLE}
    for part in ("A100", "H100", "H200", "B200", "MI300X", "MI325X", "MI355X"):
        assert any(part in n for n in names), part


@pytest.mark.parametrize("c", TABLE, ids=lambda c: c.name)
def test_every_entry_is_complete_and_sourced(c: Ceilings):
    assert c.units > 0 and c.hbm_bytes_per_s > 0 and c.l2_bytes > 0 and c.llc_bytes >= 0
    assert c.aliases and c.arch and c.notes
    assert c.arch.startswith("sm_") if c.vendor == "nvidia" else c.arch.startswith("gfx")
    for group in ("bandwidth", "caches", "flops"):
        assert c.sources[group].startswith("https://"), (c.name, group)
        assert "(" in c.sources[group], "each source names its document"
    assert set(c.peak_flops) <= set(FLOP_KEYS)
    for key in ("fp64", "fp32", "bf16_tensor", "fp16_tensor", "int8_tensor"):
        assert c.peak_flops[key] > 0, (c.name, key)
    # Sanity of magnitudes: bandwidth 1-20 TB/s, tensor peaks 0.1-20 PFLOP/s dense.
    assert 1e12 <= c.hbm_bytes_per_s <= 20e12
    assert 1e14 <= c.peak_flops["bf16_tensor"] <= 2e16


def test_validator_rejects_unknown_flop_key_and_nonpositive_values():
    base = by_name("NVIDIA H100 SXM").model_dump()
    with pytest.raises(ValueError):
        Ceilings(**{**base, "peak_flops": {"fp32": 1e12, "tf32": 1e12}})
    with pytest.raises(ValueError):
        Ceilings(**{**base, "peak_flops": {"fp32": 0.0}})


@pytest.mark.parametrize("device_name, expected", [
    ("NVIDIA H200", "NVIDIA H200 SXM 141GB"),
    ("NVIDIA H200 NVL", "NVIDIA H200 SXM 141GB"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM4 80GB"),
    ("NVIDIA B200", "NVIDIA B200"),
    ("AMD Instinct MI300X", "AMD Instinct MI300X"),
    ("AMD Instinct MI300X VF", "AMD Instinct MI300X"),
    ("AMD Instinct MI325X", "AMD Instinct MI325X"),
    ("AMD Instinct MI355X", "AMD Instinct MI355X"),
    ("amd instinct mi355x", "AMD Instinct MI355X"),
])
def test_lookup_real_device_names(device_name: str, expected: str):
    found = lookup(device_name)
    assert found is not None and found.name == expected


@pytest.mark.parametrize("device_name", [
    "", "cpu", "NVIDIA GeForce RTX 4090", "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA A100-SXM4-40GB",
    "NVIDIA GB200", "AMD Instinct MI250X", "AMD Instinct MI350X", "AMD Instinct MI300A",
])
def test_lookup_unknown_names_return_none(device_name: str):
    assert lookup(device_name) is None


def _entry(name: str, aliases: list[str]) -> Ceilings:
    return by_name("NVIDIA H100 SXM").model_copy(update={"name": name, "aliases": aliases})


def test_longest_alias_wins_regardless_of_table_order():
    generic, nvl = _entry("generic", ["H100"]), _entry("nvl", ["H100 NVL"])
    for table in ([generic, nvl], [nvl, generic]):
        assert lookup("NVIDIA H100 NVL", table).name == "nvl"
        assert lookup("NVIDIA H100 PCIe", table).name == "generic"
        assert lookup("NVIDIA H200", table) is None


def test_aliases_match_whole_tokens_only():
    table = [_entry("mi300x", ["MI300X"]), _entry("b200", ["B200"])]
    assert lookup("AMD Instinct MI325X", table) is None
    assert lookup("NVIDIA GB200", table) is None
    assert lookup("AMD Instinct MI300XL", table) is None
    assert lookup("AMD Instinct MI300X-HF", table).name == "mi300x"


def test_real_aliases_do_not_capture_sibling_parts():
    assert lookup("NVIDIA H200").name != lookup("NVIDIA H100 80GB HBM3").name
    assert lookup("AMD Instinct MI325X").name != lookup("AMD Instinct MI300X").name


@pytest.mark.parametrize("dtype, matmul, unit", [
    ("float32", True, "fp32"),
    ("torch.float32", True, "fp32"),
    ("float32", False, "fp32"),
    ("bfloat16", True, "bf16_tensor"),
    ("bfloat16", False, "fp32"),
    ("float16", True, "fp16_tensor"),
    ("float16", False, "fp32"),
    ("float64", True, "fp64_tensor"),
    ("float64", False, "fp64"),
    ("float8_e4m3fn", True, "fp8_tensor"),
    ("float8_e5m2", True, "fp8_tensor"),
    ("float8_e4m3fn", False, "fp32"),
    ("int8", True, "int8_tensor"),
    ("int8", False, "fp32"),
    ("int64", False, "fp32"),
    ("complex128", False, "fp64"),
])
def test_dtype_unit(dtype: str, matmul: bool, unit: str):
    assert dtype_unit(dtype, matmul) == unit


def test_dtype_unit_falls_back_to_units_the_part_has():
    a100, h100 = by_name("NVIDIA A100 SXM4 80GB"), by_name("NVIDIA H100 SXM")
    assert dtype_unit("float8_e4m3fn", True, a100) == "fp16_tensor"
    assert dtype_unit("float8_e4m3fn", True, h100) == "fp8_tensor"
    no_fp64_tensor = h100.model_copy(update={"peak_flops": {k: v for k, v in h100.peak_flops.items()
                                                            if k != "fp64_tensor"}})
    assert dtype_unit("float64", True, no_fp64_tensor) == "fp64"
    for c in TABLE:
        for name in ("float32", "bfloat16", "float16", "float64", "float8_e4m3fn", "int8"):
            for matmul in (True, False):
                assert dtype_unit(name, matmul, c) in c.peak_flops, (c.name, name, matmul)


def test_dtype_unit_rejects_unknown_names():
    with pytest.raises(ValueError):
        dtype_unit("float128", True)


def test_fastest_peak_is_the_max_entry():
    assert fastest_peak(by_name("NVIDIA H100 SXM")) == pytest.approx(1979e12)
    assert fastest_peak(by_name("NVIDIA B200")) == pytest.approx(9000e12)
    assert fastest_peak(by_name("AMD Instinct MI355X")) == by_name("AMD Instinct MI355X").peak_flops["fp4_tensor"]
    for c in TABLE:
        assert all(fastest_peak(c) >= v for v in c.peak_flops.values())


def test_sanity_relations():
    for c in TABLE:
        assert c.peak_flops["bf16_tensor"] > c.peak_flops["fp32"], c.name
        assert c.peak_flops["fp64"] <= c.peak_flops.get("fp64_tensor", c.peak_flops["fp64"])
        assert (c.llc_bytes == 0) == (c.vendor == "nvidia"), c.name
    h100, h200 = by_name("NVIDIA H100 SXM"), by_name("NVIDIA H200 SXM 141GB")
    assert h200.hbm_bytes_per_s > h100.hbm_bytes_per_s
    assert h200.peak_flops == h100.peak_flops
    assert h100.l2_bytes == 50 * MiB and by_name("NVIDIA A100 SXM4 80GB").l2_bytes == 40 * MiB
    for name in ("AMD Instinct MI300X", "AMD Instinct MI325X", "AMD Instinct MI355X"):
        c = by_name(name)
        assert c.llc_bytes == 256 * MiB and c.l2_bytes == 32 * MiB
    assert by_name("AMD Instinct MI325X").hbm_bytes_per_s > by_name("AMD Instinct MI300X").hbm_bytes_per_s
    assert "tf32_tensor" not in by_name("AMD Instinct MI355X").peak_flops


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_present_device_is_none_without_a_gpu():
    assert present_device() is None
    assert present_device(3) is None


def _fake_gpu(monkeypatch, props, hip):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props)
    monkeypatch.setattr(torch.version, "hip", hip)


def test_present_device_nvidia_prefers_reported_l2(monkeypatch):
    props = SimpleNamespace(name="NVIDIA H200", major=9, minor=0, multi_processor_count=132,
                            total_memory=143156 * MiB, L2_cache_size=62914560)
    _fake_gpu(monkeypatch, props, None)
    d = present_device()
    assert d is not None and d.vendor == "nvidia" and d.arch == "sm_90" and d.units == 132
    assert d.l2_bytes == 62914560 == d.l2_reported_bytes
    assert d.ceilings is not None and d.ceilings.name == "NVIDIA H200 SXM 141GB"
    assert present_device(1) is None


def test_present_device_unknown_nvidia_part_without_l2(monkeypatch):
    props = SimpleNamespace(name="NVIDIA Future GPU", major=12, minor=1, multi_processor_count=10,
                            total_memory=8 << 30)
    _fake_gpu(monkeypatch, props, None)
    d = present_device()
    assert d.arch == "sm_121" and d.ceilings is None and d.l2_bytes is None


def test_present_device_amd_counts_every_xcd_l2(monkeypatch):
    props = SimpleNamespace(name="AMD Instinct MI300X", major=9, minor=4, gcnArchName="gfx942:sramecc+:xnack-",
                            multi_processor_count=304, total_memory=196592 * MiB, L2_cache_size=4 * MiB)
    _fake_gpu(monkeypatch, props, "6.2.41133")
    d = present_device()
    assert d.vendor == "amd" and d.arch == "gfx942" and d.units == 304
    assert d.l2_reported_bytes == 4 * MiB and d.l2_bytes == 32 * MiB
    assert d.ceilings.llc_bytes == 256 * MiB


def test_module_does_not_import_torch_at_import_time():
    source = open(devices.__file__).read()
    top_level = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert not any("torch" in line for line in top_level)
