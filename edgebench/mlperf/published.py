"""Published MLPerf Inference figures the report sets beside a run's own: v3.1, closed
division, NVIDIA Jetson AGX Orin, ResNet-50 v1.5 in INT8 (JetPack 5.1.1, TensorRT 8.5.2).
Only the closed division's ResNet-50 v1.5 is comparable to a run of ``resnet50``; any other
model's scenarios are MLPerf-style (open). timm's ``resnet50`` has the v1.5 layout (the
stride in the 3x3 convolution)."""
from __future__ import annotations

SOURCE = ("MLPerf Inference v3.1, closed division, edge: NVIDIA Jetson AGX Orin 64GB, "
          "ResNet-50 v1.5, INT8, JetPack 5.1.1, TensorRT 8.5.2")
ORIN_RESNET50 = {
    "singlestream": {"value": 0.640, "unit": "ms", "metric": "90th percentile latency",
                     "accelerators": "GPU"},
    "multistream": {"value": 2.182, "unit": "ms", "metric": "99th percentile latency per query",
                    "accelerators": "GPU"},
    "offline": {"value": 6423.63, "unit": "samples/s", "metric": "samples per second",
                "accelerators": "GPU + 2 DLA"},
}
ACCURACY = {"int8_top1": 75.900, "fp32_top1": 76.46}
COMPARABLE_MODEL = "resnet50"


def comparable(model: str, device: dict) -> bool:
    """Whether a run's scenario figures stand beside the published ones: ResNet-50 on an
    AGX Orin (not an emulated one)."""
    name = str((device or {}).get("name", ""))
    return (model == COMPARABLE_MODEL and (device or {}).get("kind") == "jetson"
            and "AGX Orin" in name and not (device or {}).get("emulated"))
