"""The torch and device facts stored in a run's environment, beside the allow-listed ones
(``monitor.provenance.environment``).

Here, not in ``provenance``, because only backends import torch: a reader of the
environment record must not pay torch's import, and the contract keeps it that way.
"""

from __future__ import annotations

from typing import Any


def weights_facts(backend: Any) -> dict[str, Any]:
    """The files a backend's weights were loaded from, for the run's environment
    (``environment["weights"]["files"]``: ``path<TAB>size<TAB>sha256`` per file a
    ``local-dir`` digest covers), so a run says exactly which bytes it scored. A loader
    sets ``weights_files`` on the backend; others record nothing."""
    files = getattr(backend, "weights_files", ())
    return {"weights": {"files": list(files)}} if files else {}


def torch_facts(device: str) -> dict[str, Any]:
    import torch

    facts: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda_available": torch.cuda.is_available(),
        "cuda_version": torch.version.cuda,
        "num_threads": torch.get_num_threads(),
    }
    if device.startswith("cuda") and torch.cuda.is_available():
        facts["gpu_name"] = torch.cuda.get_device_name(0)
        facts["cudnn"] = torch.backends.cudnn.version()
    return facts
