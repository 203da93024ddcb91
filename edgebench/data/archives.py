"""Archives from outside (the ImageNetV2 download, the ImageNet devkit) are opened here and
only here: every member is checked before anything is written, so a member whose path leaves
the target folder (``../x``, ``/etc/x``, a link pointing outside) refuses the whole archive."""
from __future__ import annotations

import os
import tarfile
from pathlib import Path

from .errors import DataError


def check_members(archive: Path, dest: Path) -> None:
    """Raise DataError naming the first member of the tar ``archive`` that would land outside
    ``dest`` or is not a plain file, folder or inside link (tarfile's "data" filter rules)."""
    dest = Path(dest)
    try:
        with tarfile.open(archive) as tar:
            for member in tar:
                try:
                    if os.path.isabs(member.name):     # tarfile would strip the "/": refuse
                        raise tarfile.AbsolutePathError(member)
                    tarfile.data_filter(member, os.fspath(dest))
                except tarfile.FilterError as e:
                    raise DataError(f"{Path(archive).name}: refused, member '{member.name}' "
                                    f"is unsafe ({e}); nothing was extracted") from None
    except (tarfile.TarError, OSError) as e:
        raise DataError(f"{Path(archive).name}: not a readable tar archive ({e})") from None


def extract(archive: Path, dest: Path) -> None:
    """Check every member, then extract with the same rules enforced by tarfile itself."""
    check_members(archive, dest)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
