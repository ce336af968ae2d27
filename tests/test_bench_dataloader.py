"""--dataloader rows: synthetic per-sample CPU cost and an image folder; pin_memory rows on CPU say why null."""

from __future__ import annotations

import torch

from bench import dataloader_bench
from bench.__main__ import main as bench_main


def test_synthetic_rows():
    rows = dataloader_bench.run(torch.device("cpu"), batch_size=4, batches=2, cpu_cost_ms=1.0, workers=(0,))
    assert [(r["num_workers"], r["pin_memory"]) for r in rows] == [(0, False), (0, True)]
    assert rows[0]["per_sample_cpu_s"] >= 0.001 and rows[0]["samples_per_s"] > 0
    assert rows[1]["samples_per_s"] is None and "CUDA" in rows[1]["reason"]


def test_image_folder_rows(tmp_path):
    from PIL import Image as pil  # Pillow: a Streamlit dependency
    for i in range(3):
        pil.new("RGB", (40, 30), (i * 50, 0, 0)).save(tmp_path / f"{i}.png")
    rows = dataloader_bench.run(torch.device("cpu"), batch_size=2, batches=1, image_folder=str(tmp_path),
                                workers=(0,))
    assert rows[0]["samples_per_s"] > 0 and "3 files" in rows[0]["dataset"]
    sample, _ = dataloader_bench.ImageFolderDataset(tmp_path, size=16)[0]
    assert sample.shape == (3, 16, 16) and sample.dtype == torch.uint8


def test_image_folder_without_images_is_bad_input(tmp_path, capsys):
    argv = ["run", "--model", "mlp", "--dataloader", "--image-folder", str(tmp_path), "--out", str(tmp_path)]
    assert bench_main(argv) == 2
    assert "--image-folder" in capsys.readouterr().err
