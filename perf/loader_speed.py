"""Loader speed: planner.inputs.loader (caps, duplicate keys, dates) vs plain yaml.safe_load and yaml CSafeLoader.

Parses every shipped GPU profile and scenario (text already in memory, so only parsing is timed), and every
shipped result file with loader.parse_json vs json.loads. Prints medians over repeated rounds and the ratios, in
one run (the machines are shared and noisy: compare medians, not single runs).

    .venv/bin/python perf/loader_speed.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from planner.inputs import loader  # noqa: E402


def _median_ms(fn, texts: list[str], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for text in texts:
            fn(text)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    rounds = ap.parse_args().rounds
    groups = {
        "GPU profiles": (sorted((ROOT / "gpu_profiles").glob("*.yaml")), loader.PROFILE),
        "scenarios": (sorted((ROOT / "scenarios").glob("*.yaml")), loader.SCENARIO),
    }
    c_loader = getattr(yaml, "CSafeLoader", None)
    print(f"PyYAML {yaml.__version__}, libyaml: {c_loader is not None}; medians of {rounds} rounds, all files per round")
    for label, (paths, kind) in groups.items():
        texts = [p.read_text(encoding="utf-8") for p in paths]
        for t in texts:  # same data both ways (plain YAML 1.1 leaves `1e9` as text: compare only the shipped files)
            loader.parse_yaml(t, "bench", kind)
        ours = _median_ms(lambda t, k=kind: loader.parse_yaml(t, "bench", k), texts, rounds)
        safe = _median_ms(yaml.safe_load, texts, max(3, rounds // 5))
        line = (f"{label:13} {len(texts):3} files {sum(map(len, texts)) / 1024:6.1f} KiB | loader {ours:7.2f} ms | "
                f"yaml.safe_load {safe:7.2f} ms ({safe / ours:4.1f}x slower than the loader)")
        if c_loader is not None:
            fast = _median_ms(lambda t: yaml.load(t, Loader=c_loader), texts, rounds)  # noqa: S506 - safe loader
            line += f" | CSafeLoader {fast:7.2f} ms (loader = {ours / fast:4.2f}x its time)"
        print(line)
    results = sorted(p for p in (ROOT / "results").rglob("*.json"))
    texts = [p.read_text(encoding="utf-8") for p in results]
    if texts:
        ours = _median_ms(lambda t: loader.parse_json(t, "bench", loader.RESULT), texts, rounds)
        plain = _median_ms(json.loads, texts, rounds)
        print(f"{'result files':13} {len(texts):3} files {sum(map(len, texts)) / 1024:6.1f} KiB | loader {ours:7.2f} ms | "
              f"json.loads {plain:7.2f} ms (loader = {ours / plain:4.2f}x its time)")
    big = json.dumps({"measurements": [{"precision": "bf16", "batch_size": b, "step_time_s": {"median": 0.1 * b},
                                        "phases_s": {"forward": 0.03, "backward": 0.06}} for b in range(1, 60_000)]})
    ours = _median_ms(lambda t: loader.parse_json(t, "bench", loader.RESULT), [big], max(3, rounds // 5))
    plain = _median_ms(json.loads, [big], max(3, rounds // 5))
    print(f"{'one big JSON':13}   1 file  {len(big) / 2**20:6.1f} MiB | loader {ours:7.2f} ms | json.loads {plain:7.2f} ms "
          f"(loader = {ours / plain:4.2f}x its time)")


if __name__ == "__main__":
    main()
