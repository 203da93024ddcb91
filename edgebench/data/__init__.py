"""Data: find the images and their labels (``sources``), decode and preprocess them once
per preprocessing config into a cached uint8 array (``prepare``), and hand the same batches
to every variant."""
from .sources import DataError, ImageList, SAMPLE_DIR, resolve_source  # noqa: F401
from .prepare import PreparedData, prepare, prepare_checked  # noqa: F401
