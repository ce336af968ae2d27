"""One slug for every file name built from a name people type (saved scenarios, downloads, result files)."""

from __future__ import annotations

import dataclasses

import pytest

from planner.inputs.filenames import slug
from planner.inputs.scenario import load_scenario_file
from planner.inputs.userdata import DEFAULT_SCENARIO
from planner.present.compare import scenario_file_name as saved_name
from ui.scenario_files import file_stem
from ui.scenario_files import scenario_file_name as download_name


@pytest.mark.parametrize("text,expected", [
    ("ResNet-50 on ImageNet-1k (90 epochs)", "resnet-50-on-imagenet-1k-90-epochs"),
    ("Ajuste fino de BERT en español — MNLI", "ajuste-fino-de-bert-en-espanol-mnli"),
    ("Señal: ¿cuánto cuesta?", "senal-cuanto-cuesta"),
    ("NVIDIA GeForce RTX 4090 24GB", "nvidia-geforce-rtx-4090-24gb"),
    ("../../etc/passwd", "etc-passwd"),
    ("日本語", "unknown"),
    ("", "unknown"),
])
def test_slug_is_portable_ascii(text, expected):
    assert slug(text) == expected


def test_slug_cuts_at_a_word_boundary_dash():
    assert slug("a" * 59 + " b", max_chars=60) == "a" * 59
    assert len(slug("x" * 500)) == 80


def test_the_app_the_report_and_saved_scenarios_name_one_scenario_alike():
    s = dataclasses.replace(load_scenario_file(DEFAULT_SCENARIO), name="Entrenamiento en español: ResNet-50")
    stem = "entrenamiento-en-espanol-resnet-50"
    assert saved_name(s.name) == download_name(s) == f"{stem}.yaml"
    assert file_stem(s) == stem
