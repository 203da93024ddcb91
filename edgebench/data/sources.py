"""Where images come from, and their labels as class indices.

Accepted layouts for ``--data PATH``:
  1. class folders named by WordNet id:      PATH/<wnid>/*.JPEG         (ImageNet val prepared
     by torchvision or the usual valprep script; also the bundled sample)
  2. a flat folder of ILSVRC2012_val_*.JPEG with labels: a text file with one wnid per line
     in sorted file order (``--labels FILE`` or PATH/labels.txt), or the devkit ground truth
     (ILSVRC2012_devkit_t12.tar.gz, or torchvision's prepared meta.bin, in PATH or beside it)
  3. ImageNetV2: class-index folders PATH/0 .. PATH/999
  4. your own labelled images: class folders of any names, PATH/<class>/* (torchvision's
     ImageFolder convention: the sorted folder names give the class indices), or the class
     order from ``--labels FILE`` (one class name per line)
The special value ``imagenetv2`` (or ``imagenetv2-<variant>``) downloads ImageNetV2.

Labels are class indices into a label space of ``ImageList.n_classes`` classes: ImageNet's
1000 (timm order) for layouts 1-3, the folders' (or the labels file's) count for 4. Sorted
wnids are also ImageNet's order, so wnid folders carry both readings: a model of 1000
classes reads them as ImageNet's, a model of as many classes as there are folders (one
fine-tuned on an ImageNet subset) as ImageFolder's (``for_model``).
"""
from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

from .errors import DataError  # noqa: F401 - re-exported: edgebench.data.DataError

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIR = REPO_ROOT / "datasets" / "sample"
IMAGE_EXTS = {".jpeg", ".jpg", ".png", ".bmp", ".webp", ".ppm", ".tif", ".tiff"}
WNID = re.compile(r"^n\d{8}$")
SPLITS = {"train", "val", "test", "validation"}   # a data set's root, not its classes
LAYOUTS = ("PATH/<wnid>/*.JPEG (ImageNet val in class folders)",
           "PATH/ILSVRC2012_val_*.JPEG with labels (one wnid per line, or the devkit "
           "ILSVRC2012_devkit_t12.tar.gz / torchvision meta.bin)",
           "PATH/0..999/* (ImageNetV2 class-index folders)",
           "PATH/<class>/* (your own labelled images: class folders of any names, sorted "
           "names give the class indices, or --labels FILE gives their order)")


@dataclasses.dataclass
class ImageList:
    name: str                    # "sample", "imagenet-val", "imagenetv2", ...
    root: str
    layout: str
    paths: list[str]
    labels: list[int]            # class index per image (ImageNet's for 1-3), -1 when unknown
    license: str = ""
    n_classes: int = 1000        # the label space's size
    classes: list = dataclasses.field(default_factory=list)   # class names, by index (layout 4)
    # Class folders: each image's index in the sorted folder names (ImageFolder's reading),
    # for a model with as many classes as there are folders.
    folder_labels: list | None = None
    folder_classes: list = dataclasses.field(default_factory=list)

    def __len__(self) -> int:
        return len(self.paths)

    def for_model(self, num_classes: int | None, model: str = "") -> tuple["ImageList", str]:
        """The images with labels for a model of ``num_classes`` classes, and how they were
        mapped; DataError naming both counts where neither reading fits. ``None``: the model
        has no [batch, classes] output (its accuracy task is skipped; labels kept)."""
        if num_classes is None or num_classes == self.n_classes:
            how = ("ImageNet's class indices" if self.n_classes == 1000 and not self.classes
                   else f"{self.n_classes} classes" + (" (--labels order)" if self.layout ==
                                                       "class-folders-with-labels" else
                                                       " (sorted folder names)"))
            return self, how
        if self.folder_labels is not None and num_classes == len(self.folder_classes):
            return (dataclasses.replace(self, labels=list(self.folder_labels),
                                        n_classes=num_classes, classes=list(self.folder_classes),
                                        folder_labels=None),
                    f"{num_classes} class folders in sorted order (ImageFolder)")
        folders = (f" ({len(self.folder_classes)} class folders)"
                   if self.folder_classes and len(self.folder_classes) != self.n_classes else "")
        raise DataError(f"--data {self.root}: the data has {self.n_classes} classes{folders}, "
                        f"the model{' ' + model if model else ''} {num_classes}: give data of "
                        "the model's classes (or --labels FILE with the model's class order)")

    def limit(self, n: int | None) -> "ImageList":
        """The first n images of a fixed, evenly spread selection (every k-th image), so a
        quick run still sees many classes."""
        if not n or n >= len(self.paths):
            return self
        step = len(self.paths) / n
        idx = [int(i * step) for i in range(n)]
        return dataclasses.replace(self, paths=[self.paths[i] for i in idx],
                                   labels=[self.labels[i] for i in idx],
                                   folder_labels=None if self.folder_labels is None
                                   else [self.folder_labels[i] for i in idx])


def _wnid_index() -> dict[str, int]:
    from timm.data import ImageNetInfo

    return {w: i for i, w in enumerate(ImageNetInfo().label_names())}


def _all_files(folder: Path) -> list[Path]:
    # Every regular file counts as a candidate image: non-images are skipped and named later.
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))


def _class_folders(root: Path, wnids: dict[str, int]) -> ImageList | None:
    subdirs = [d for d in root.iterdir() if d.is_dir() and WNID.match(d.name)]
    if not subdirs:
        return None
    paths, labels, folder_labels = [], [], []
    names = sorted(d.name for d in subdirs)
    for i, d in enumerate(sorted(subdirs)):
        for p in _all_files(d):
            paths.append(str(p))
            labels.append(wnids.get(d.name, -1))
            folder_labels.append(i)
    return ImageList("imagenet-val", str(root), "wnid-folders", paths, labels,
                     folder_labels=folder_labels, folder_classes=names)


def _own_folders(root: Path, labels_file: str | None) -> ImageList | None:
    """Class folders of any names (layout 4): sorted names are the class indices, or the
    order of ``labels_file`` (one class name per line; every folder must be in it)."""
    subdirs = sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    if not subdirs:
        return None
    names = [d.name for d in subdirs]
    layout = "class-folders"
    order = names
    if labels_file:
        order = _class_order(labels_file)
        missing = [n for n in names if n not in order]
        if missing:
            raise DataError(f"--labels {labels_file}: no line for the class folder(s) "
                            f"{', '.join(missing[:5])} of {root}")
        layout = "class-folders-with-labels"
    index = {n: i for i, n in enumerate(order)}
    paths, labels = [], []
    for d in subdirs:
        for p in _all_files(d):
            paths.append(str(p))
            labels.append(index[d.name])
    return ImageList("image-folder", str(root), layout, paths, labels, n_classes=len(order),
                     classes=list(order))


def _class_order(labels_file: str) -> list[str]:
    p = Path(labels_file)
    if not p.is_file():
        raise DataError(f"--labels {labels_file}: " + ("is a folder, not a file" if p.is_dir()
                                                       else "does not exist"))
    try:
        lines = [ln.strip() for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"--labels {labels_file}: cannot be read as text ({type(e).__name__})") from None
    twice = sorted({n for n in lines if lines.count(n) > 1})
    if twice:
        raise DataError(f"--labels {labels_file}: class(es) named twice: {', '.join(twice[:5])}")
    if not lines:
        raise DataError(f"--labels {labels_file}: no class names in it")
    return lines


def _index_folders(root: Path) -> ImageList | None:
    subdirs = [d for d in root.iterdir() if d.is_dir() and d.name.isdigit()]
    if not subdirs or any(int(d.name) > 999 for d in subdirs):
        return None
    paths, labels, folder_labels = [], [], []
    ordered = sorted(subdirs, key=lambda d: int(d.name))
    for i, d in enumerate(ordered):
        for p in _all_files(d):
            paths.append(str(p))
            labels.append(int(d.name))
            folder_labels.append(i)
    # Numbered folders of fewer classes (your own 0..N-1) read as N classes in number order.
    return ImageList("imagenetv2", str(root), "class-index-folders", paths, labels,
                     folder_labels=folder_labels, folder_classes=[d.name for d in ordered])


def _devkit_wnids(root: Path) -> list[str] | None:
    """Per-image wnids from the devkit, through torchvision's own preparation."""
    from torchvision.datasets import imagenet as tv

    for base in (root, root.parent):
        if (base / tv.META_FILE).is_file():
            return list(tv.load_meta_file(str(base))[1])
        devkit = base / "ILSVRC2012_devkit_t12.tar.gz"
        if devkit.is_file():
            from .archives import check_members

            # torchvision checks the archive's md5, then extracts it with no path filter:
            # check the members first, so nothing can be written outside a temp folder.
            check_members(devkit, base)
            try:
                tv.parse_devkit_archive(str(base))  # verifies the md5, writes meta.bin
            except RuntimeError as e:           # md5 mismatch: not the real devkit
                raise DataError(f"{devkit}: {e}") from None
            return list(tv.load_meta_file(str(base))[1])
    return None


def _flat_val(root: Path, labels_file: str | None, wnids: dict[str, int]) -> ImageList | None:
    files = sorted(p for p in root.iterdir() if p.is_file() and p.name.startswith("ILSVRC2012_val_"))
    if not files:
        return None
    per_image: list[str] | None = None
    candidates = [Path(labels_file)] if labels_file else [root / "labels.txt", root / "val_labels.txt"]
    source = "the devkit labels"
    for c in candidates:
        if c.is_file():
            source = f"--labels {c}" if labels_file else f"labels file {c}"
            try:
                text = c.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise DataError(f"{source}: cannot be read as text ({type(e).__name__})") from None
            per_image = [ln.split()[-1] for ln in text.splitlines() if ln.strip()]
            break
    if per_image is None:
        if labels_file:
            what = "is a folder, not a file" if Path(labels_file).is_dir() else "does not exist"
            raise DataError(f"--labels {labels_file}: {what}")
        per_image = _devkit_wnids(root)
    if per_image is None:
        raise DataError(f"{root}: flat ILSVRC2012_val_* images but no labels: give --labels FILE "
                        "(one wnid per line, in file order), or put labels.txt, "
                        "ILSVRC2012_devkit_t12.tar.gz or torchvision's meta.bin in the folder")
    # ILSVRC2012_val_00000001.JPEG is image 1: index labels by the number, not list position,
    # so a partial copy of the val set still gets the right labels.
    paths, labels = [], []
    for p in files:
        m = re.search(r"(\d+)", p.stem.removeprefix("ILSVRC2012_val_"))
        k = int(m.group(1)) - 1 if m else -1
        if not 0 <= k < len(per_image):
            raise DataError(f"{source}: {len(per_image)} lines, but {p.name} is image {k + 1}: "
                            "one wnid per line is needed for every image, in file order")
        w = per_image[k]
        if w not in wnids:
            raise DataError(f"{source}: '{w}' (line {k + 1}, for {p.name}) is not an ImageNet wnid")
        paths.append(str(p))
        labels.append(wnids[w])
    return ImageList("imagenet-val", str(root), "flat-with-labels", paths, labels)


def load_folder(path: str, labels_file: str | None = None) -> ImageList:
    root = Path(path).expanduser()
    if not root.exists():
        raise DataError(f"--data: '{path}' does not exist")
    if not root.is_dir():
        raise DataError(f"--data: '{path}' is not a folder")
    if not any(not p.name.startswith(".") for p in root.iterdir()):
        raise DataError(f"--data: '{path}' is an empty folder")
    wnids = _wnid_index()
    # --labels beside class folders gives the class order: that is layout 4 whatever the names.
    folders_labels = labels_file and any(d.is_dir() for d in root.iterdir())
    finders = [lambda: _own_folders(root, labels_file)] if folders_labels else []
    finders += [lambda: _class_folders(root, wnids), lambda: _flat_val(root, labels_file, wnids),
                lambda: _index_folders(root), lambda: _own_folders(root, None)]
    splits = {d.name for d in root.iterdir() if d.is_dir()}
    if (root / "val").is_dir() and splits <= SPLITS:     # a data set's root: evaluate val/
        return load_folder(str(root / "val"), labels_file)
    for finder in finders:
        found = finder()
        if found is not None and found.paths:
            return found
    raise DataError(f"--data: '{path}' is not a layout edgebench recognises; accepted layouts: "
                    + "; ".join(LAYOUTS))


def check_readable(images: ImageList) -> None:
    """Raise DataError unless at least one of ``images`` is an image file (PIL reads its
    header; stops at the first that is): a folder of text files is bad input, found before
    the run starts rather than when the first model's data is prepared."""
    from PIL import Image

    first = None
    for p in images.paths:
        try:
            with Image.open(p):
                return
        except Exception as e:  # noqa: BLE001 - PIL raises several kinds; any means "not an image"
            first = first or f"{os.path.basename(p)}: {type(e).__name__}"
    raise DataError(f"--data: '{images.root}' holds no image files: none of its "
                    f"{len(images.paths)} files is an image PIL can read (first: {first})")


def bundled_sample() -> ImageList:
    lst = load_folder(str(SAMPLE_DIR))
    lic_path = SAMPLE_DIR / "LICENSE.md"
    lic = lic_path.read_text(encoding="utf-8") if lic_path.exists() else ""
    return dataclasses.replace(lst, name="sample", license=lic.splitlines()[0] if lic else "")


def resolve_source(data: str | None, labels_file: str | None = None,
                   download_dir: str | None = None) -> ImageList:
    """``data`` is None (the bundled sample), 'imagenetv2[-variant]' (downloaded when missing)
    or a folder path."""
    if data in (None, "", "sample"):
        return bundled_sample()
    if data.startswith("imagenetv2") and not os.path.exists(data):
        from .imagenetv2 import ensure_imagenetv2

        folder = ensure_imagenetv2(data, download_dir)
        lst = _index_folders(Path(folder))
        if lst is None:
            raise DataError(f"{folder}: downloaded ImageNetV2 has no class-index folders")
        return lst
    return load_folder(data, labels_file)
