"""Fine-tune a classifier on a folder of your own labelled images and save its checkpoint, the
way a user arrives at edgebench with one:

    python examples/own_model/train.py --data my_images/ --out tiny_cnn.pt             # the example CNN
    python examples/own_model/train.py --data my_images/ --out r18.pt --arch resnet18  # a timm architecture

``--data`` holds one folder per class (torchvision's ImageFolder: sorted folder names are the
class indices, as edgebench reads them). The checkpoint is a plain ``state_dict``. Then:

    python -m edgebench.full --model-path examples/own_model --models tiny_cnn:build \
        --weights tiny_cnn.pt --data my_images/
    python -m edgebench.full --models resnet18 --num-classes 5 --weights r18.pt --data my_images/
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
    p.add_argument("--data", required=True, help="class folders of images")
    p.add_argument("--out", required=True, help="the checkpoint (state_dict) to write")
    p.add_argument("--arch", default=None,
                   help="a timm architecture with a head of the data's class count "
                        "(default: the example TinyCNN)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    from torchvision import datasets, transforms

    torch.manual_seed(args.seed)
    ds = datasets.ImageFolder(args.data)
    n_classes = len(ds.classes)
    if args.arch:
        import timm

        model = timm.create_model(args.arch, pretrained=False, num_classes=n_classes)
        size = timm.data.resolve_data_config({}, model=model)["input_size"][1:]
    else:
        model, size = tiny_cnn.TinyCNN(num_classes=n_classes), tiny_cnn.INPUT_SIZE[1:]
    ds.transform = transforms.Compose([
        transforms.RandomResizedCrop(size, scale=(0.5, 1.0)), transforms.RandomHorizontalFlip(),
        transforms.ToTensor(), transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
    loader = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=True)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for epoch in range(args.epochs):
        total = correct = 0
        for x, y in loader:
            opt.zero_grad()
            out = model(x)
            torch.nn.functional.cross_entropy(out, y).backward()
            opt.step()
            total += len(y)
            correct += int((out.argmax(1) == y).sum())
        print(f"epoch {epoch + 1}: train top-1 {100 * correct / max(total, 1):.1f}% "
              f"({total} images, {n_classes} classes: {', '.join(ds.classes)})")
    torch.save(model.state_dict(), args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
