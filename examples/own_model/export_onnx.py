"""Export the example model to ONNX, as a deployment team would hand it over:

    python examples/own_model/export_onnx.py --out tiny_cnn.onnx [--weights CKPT] [--two-heads]

The batch dimension is dynamic; the input is float32 NCHW at 3x64x64. edgebench then runs it
with every variant that starts from ONNX:

    python -m edgebench.full --models tiny_cnn.onnx --data my_images/
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_cnn  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="the .onnx file to write")
    p.add_argument("--weights", default=None, help="a state_dict checkpoint to load first")
    p.add_argument("--two-heads", action="store_true",
                   help="export the two-output model (logits and pooled features)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random weights (default 0)")
    args = p.parse_args(argv)
    torch.manual_seed(args.seed)
    model = tiny_cnn.two_heads() if args.two_heads else tiny_cnn.build()
    if args.weights:
        model.load_state_dict(torch.load(args.weights, map_location="cpu", weights_only=True))
    model.eval()
    x = torch.randn(2, *tiny_cnn.INPUT_SIZE)
    names = ["logits", "features"] if args.two_heads else ["logits"]
    torch.onnx.export(model, (x,), args.out, dynamo=True, opset_version=18,
                      input_names=["image"], output_names=names,
                      dynamic_shapes=({0: torch.export.Dim("n", min=1, max=4096)},),
                      external_data=False, verbose=False)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
