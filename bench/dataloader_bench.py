"""`--dataloader`: input-pipeline throughput for num_workers x pin_memory, on a synthetic dataset with a set
per-sample CPU cost or on an image folder, so a plan can say when a run is input-bound."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TypeAlias

import torch
from torch.utils.data import DataLoader, Dataset

from bench.stats import summarize
from planner.inputs.reasons import reason_fields
from planner.vocab import Reason

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")
WORKERS = (0, 2, 4, 8)


class SyntheticDataset(Dataset):
    """Samples that cost `cpu_cost_s` of busy CPU each (decode/augment stand-in) and are image-sized uint8."""

    def __init__(self, length: int, cpu_cost_s: float, shape: tuple[int, ...] = (3, 224, 224)):
        self.length, self.cpu_cost_s, self.shape = length, cpu_cost_s, shape

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int):
        deadline = time.perf_counter() + self.cpu_cost_s
        while time.perf_counter() < deadline:  # busy, not sleep: workers must compete for cores as real ones do
            pass
        return torch.full(self.shape, index % 256, dtype=torch.uint8), index % 1000


class ImageFolderDataset(Dataset):
    """Every image under a folder (recursively), decoded with Pillow, resized to size x size, as uint8 CHW."""

    def __init__(self, root: str | Path, size: int = 224, length: int | None = None):
        files = sorted(p for p in Path(root).rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
        if not files:
            raise ValueError(f"--image-folder {root}: no images ({', '.join(IMAGE_SUFFIXES)}) found")
        self.files, self.size = files, size
        self.length = length or len(files)

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int):
        import numpy as np
        from PIL import Image

        with Image.open(self.files[index % len(self.files)]) as img:
            arr = np.asarray(img.convert("RGB").resize((self.size, self.size)))
        return torch.from_numpy(arr.copy()).permute(2, 0, 1).contiguous(), 0


BenchDataset: TypeAlias = SyntheticDataset | ImageFolderDataset


def per_sample_cpu_s(dataset: BenchDataset, n: int = 8) -> float:
    """Median time to produce one sample in this process."""
    times = []
    for i in range(min(n, len(dataset))):
        t0 = time.perf_counter()
        dataset[i]
        times.append(time.perf_counter() - t0)
    return summarize(times)["median"]


def loader_throughput(dataset: Dataset, batch_size: int, num_workers: int, pin_memory: bool,
                      device: torch.device) -> float:
    """Samples per second after the first batch (which pays for worker start-up), copied to `device`."""
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, num_workers=num_workers,
                        pin_memory=pin_memory, drop_last=True, persistent_workers=False)
    count, t0 = 0, None
    with warnings.catch_warnings():
        # More workers than cores is the point of the sweep (it shows where adding workers stops helping).
        warnings.filterwarnings("ignore", message="This DataLoader will create")
        for images, _labels in loader:
            images = images.to(device, non_blocking=pin_memory)
            if t0 is None:
                t0 = time.perf_counter()
                continue
            count += images.shape[0]
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elapsed = time.perf_counter() - (t0 or time.perf_counter())
    return count / elapsed if elapsed > 0 and count else 0.0


def run(device: torch.device, batch_size: int = 32, batches: int = 10, cpu_cost_ms: float = 2.0,
        image_folder: str | None = None, workers: Iterable[int] = WORKERS, on_row=None) -> list[dict]:
    """The `dataloader` rows of a result file: {num_workers, pin_memory, per_sample_cpu_s, samples_per_s}."""
    length = batch_size * (batches + 1)
    dataset: BenchDataset
    if image_folder:
        dataset = ImageFolderDataset(image_folder, length=length)
        source = f"image folder {image_folder} ({len(dataset.files)} files)"
    else:
        dataset = SyntheticDataset(length, cpu_cost_ms / 1000.0)
        source = f"synthetic 3x224x224 uint8, {cpu_cost_ms:g} ms CPU per sample"
    cost = per_sample_cpu_s(dataset)
    rows = []
    for num_workers in workers:
        for pin in (False, True):
            row = {"num_workers": num_workers, "pin_memory": pin, "per_sample_cpu_s": cost,
                   "batch_size": batch_size, "dataset": source}
            if pin and device.type != "cuda":
                row["samples_per_s"] = None
                row.update(reason_fields(Reason("pin_memory_cpu")))
            else:
                row["samples_per_s"] = loader_throughput(dataset, batch_size, num_workers, pin, device)
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows
