"""Roofline arithmetic, ceilings choice (measured before datasheet), the chart, and the calibration cache."""
import json

import pytest

from kernel_mcp.hardware import devices
from kernel_mcp.results import ProfileResult, ShapeProfile, Timing
from kernel_mcp.tools import calibrate
from kernel_mcp.tools.roofline import ceilings_for, place, roofline_from
from kernel_mcp.worker.judge.verdict import physical_floor_ms

BW, PEAK = 4.0e12, 1.0e15  # 4 TB/s, 1000 TFLOP/s: ridge at 250 FLOP/byte


def test_memory_bound_point_on_the_roof():
    # 4e9 bytes at 4 TB/s take 1 ms; 1e9 flops are nothing next to that
    p = place("candidate", 1.0, flops=1e9, nbytes=4e9, bandwidth=BW, peak=PEAK)
    assert p.bound == "memory" and p.percent_of_bound == pytest.approx(100)
    assert p.gbytes_per_s == pytest.approx(4000) and p.headroom_ms == pytest.approx(0)


def test_compute_bound_point_at_half_the_roof():
    # 1e12 flops at 1e15 FLOP/s take 1 ms; measured 2 ms -> 50%, 1 ms of headroom
    p = place("candidate", 2.0, flops=1e12, nbytes=1e6, bandwidth=BW, peak=PEAK)
    assert p.bound == "compute" and p.percent_of_bound == pytest.approx(50)
    assert p.tflops == pytest.approx(500) and p.headroom_ms == pytest.approx(1.0)


def test_far_below_both_roofs_is_latency_or_underutilised():
    p = place("reference", 100.0, flops=1e9, nbytes=4e9, bandwidth=BW, peak=PEAK)
    assert p.bound == "latency/underutilised" and p.percent_of_bound == pytest.approx(1)


def test_physical_floor_uses_datasheet_and_fastest_unit():
    h200 = devices.lookup("NVIDIA H200")
    floor = physical_floor_ms(h200, flops=1e9, nbytes=4.8e9)  # 4.8 GB at 4.8 TB/s = 1 ms
    assert floor == pytest.approx(1.0)
    assert physical_floor_ms(None, 1, 1) is None


def _profile(device_name="NVIDIA H200", dtype="bfloat16"):
    shape = ShapeProfile(params={"n": 1}, dtype=dtype, flops=2e12, bytes=3e9,
                         candidate=Timing(clock="cuda events", median_ms=4.0, ci_low_ms=3.9, ci_high_ms=4.1,
                                          samples=20, rel_ci_half_width=0.025),
                         reference=Timing(clock="cuda events", median_ms=8.0, ci_low_ms=7.9, ci_high_ms=8.1,
                                          samples=20, rel_ci_half_width=0.0125))
    return ProfileResult(passed=True, trusted=True, verdict="pass", problem="p", candidate="c", device="cuda",
                         device_name=device_name, shapes=[shape])


def test_roofline_from_profile_uses_datasheet_without_calibration(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path))
    result = roofline_from(_profile(), "tensor", png=tmp_path / "roof.png")
    assert result.unit == "bf16_tensor" and result.ceilings_source.startswith("datasheet")
    assert result.peak_flops_per_s == devices.lookup("NVIDIA H200").peak_flops["bf16_tensor"]
    cand = next(p for p in result.shapes[0].points if p.who == "candidate")
    assert cand.tflops == pytest.approx(2e12 / 4e-3 / 1e12)
    assert (tmp_path / "roof.png").read_bytes()[:4] == b"\x89PNG"


def test_measured_ceilings_win_and_are_named(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path))
    (tmp_path / "calibration.json").write_text(json.dumps({"NVIDIA H200": {
        "device_name": "NVIDIA H200", "measured_at": "2026-11-29T00:00:00Z", "torch_version": "x",
        "bandwidth_by_mix": {"copy (1 read : 1 write)": 4.2e12, "add (2 reads : 1 write)": 4.3e12},
        "matmul_flops_per_s": {"bf16_tensor": 7.8e14, "fp32": 5e13}}}))
    bw, peak, unit, source = ceilings_for("NVIDIA H200", "tensor", "bfloat16")
    assert (bw, peak, unit) == (4.3e12, 7.8e14, "bf16_tensor") and "calibrate" in source
    assert ceilings_for("NVIDIA H200", "vector", "float32")[1] == 5e13


def test_unknown_device_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path))
    result = roofline_from(_profile(device_name="Imaginary GPU 9000"), "vector")
    assert not result.shapes and "calibrate" in result.message


def test_calibration_cache_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNEL_MCP_CACHE", str(tmp_path / "deep"))
    entry = calibrate.Calibration(device_name="GPU A", measured_at="t", torch_version="v",
                                  bandwidth_by_mix={"copy": 1.0},
                                  matmul_flops_per_s={"fp32": 2.0})
    calibrate._store(entry)
    calibrate._store(entry.model_copy(update={"device_name": "GPU B"}))
    assert calibrate.load_cached("GPU A") == entry and calibrate.load_cached("GPU B").device_name == "GPU B"
    assert calibrate.load_cached("GPU C") is None
    (tmp_path / "deep" / "calibration.json").write_text("{ torn")
    assert calibrate.load_cached("GPU A") is None


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="this machine has a GPU")
def test_calibrate_without_gpu_is_a_usage_error():
    from kernel_mcp.errors import UsageError
    with pytest.raises(UsageError, match="GPU"):
        calibrate.calibrate()
