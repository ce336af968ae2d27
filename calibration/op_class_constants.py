"""The implementation-dependent constants of calibration/op_classes.py (elementwise and embedding + loss, per
precision group), least squares over the shipped transformer traces, and how well the per-layer analytic split
predicts a traced model it was not fitted on (issue 15: "typed transformer shapes get the same breakdown
analytically per layer").

    .venv/bin/python calibration/op_class_constants.py            # constants and the held-out table (the README's)
    .venv/bin/python calibration/op_class_constants.py --python   # the constants as op_classes.CONSTANTS reads them

Held out: each traced model in turn (both sequence lengths of BERT-base/-large together) is left out of the fit
and predicted at its middle traced batch; error = predicted / traced - 1 of each class's bytes and of the ops of
the step, and of the total bytes. matmul and attention are exact counts (no fitted constant) and are shown too.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calibration import op_classes as oc  # noqa: E402
from planner.engine.measurements import OpClassLine, op_class_line  # noqa: E402
from planner.engine.models import shape_from_dict  # noqa: E402
from planner.inputs.resultfile import OP_CLASSES  # noqa: E402
from planner.inputs.zoo_catalog import load_catalog, lookup  # noqa: E402
from planner.vocab import element_bytes, precision_group  # noqa: E402

TRACED = ROOT / "results" / "traced"
GROUPS = ("fp32", "16-bit")


@dataclass(frozen=True)
class Traced:
    model: str
    precision: str
    terms: oc.Terms
    parameters: int
    line: OpClassLine
    middle_batch: int

    @property
    def b(self) -> int:
        return element_bytes(self.precision)


def load_traces() -> list[Traced]:
    """Every SDPA trace of a transformer shape in results/traced/, one line per precision (newest file per model and
    sequence length: the folder keeps one)."""
    catalog = load_catalog()
    out = []
    for path in sorted(TRACED.glob("*.json")):
        d = json.loads(path.read_text(encoding="utf-8"))
        shape = shape_from_dict(d["model"].get("transformer"))
        if shape is None or (d.get("settings") or {}).get("attention") == "eager":
            continue
        entry = lookup(catalog, d["model"]["name"]) or {}
        family = entry.get("family") or d["model"].get("family") or "decoder"
        rows: dict[str, list] = {}
        for m in d["measurements"]:
            if m.get("status") == "ok" and m.get("source") == "traced" and m.get("op_classes"):
                rows.setdefault(m["precision"], []).append((m["batch_size"], m["op_classes"]))
        for precision, pts in sorted(rows.items()):
            line = op_class_line(pts, path.name)
            if line is not None:
                out.append(Traced(d["model"]["name"], precision, oc.terms(shape, family), int(d["model"]["params"]),
                                  line, line.batches[len(line.batches) // 2]))
    return out


def _lstsq2(xs: Sequence[tuple[float, float]], ys: Sequence[float]) -> tuple[float, float]:
    """y ≈ p·x0 + q·x1 (normal equations)."""
    a = sum(x0 * x0 for x0, _ in xs)
    b = sum(x0 * x1 for x0, x1 in xs)
    c = sum(x1 * x1 for _, x1 in xs)
    d = sum(x0 * y for (x0, _), y in zip(xs, ys, strict=True))
    e = sum(x1 * y for (_, x1), y in zip(xs, ys, strict=True))
    det = a * c - b * b
    if abs(det) < 1e-12 * max(a * c, 1.0):
        raise SystemExit("the traces do not separate the two terms (a regressor is all zeros or proportional)")
    return (d * c - b * e) / det, (a * e - b * d) / det


def _through_origin(xs: Sequence[float], ys: Sequence[float]) -> float:
    den = sum(x * x for x in xs)
    return sum(x * y for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def fit(traces: Sequence[Traced]) -> dict[str, oc.ImplementationConstants]:
    out = {}
    for group in GROUPS:
        ts = [t for t in traces if precision_group(t.precision) == group]
        ew = [(float(t.terms.layers), 1.0) for t in ts]
        ew_y = [t.line.fields["elementwise.bytes"][0] / (t.terms.tokens * t.terms.hidden * t.b) for t in ts]
        per_layer, fixed = _lstsq2(ew, ew_y)
        weights = _through_origin([float(t.parameters) for t in ts], [t.line.fields["elementwise.bytes"][1] for t in ts])
        ops_per_layer, ops_fixed = _lstsq2(ew, [t.line.fields["elementwise.ops"][1] for t in ts])
        emb_x = [(float(t.terms.hidden), float(t.terms.vocab)) for t in ts]
        emb_y = [t.line.fields["embedding_loss.bytes"][0] / (t.terms.tokens * t.b) for t in ts]
        per_hidden, per_vocab = _lstsq2(emb_x, emb_y)
        emb_w = _through_origin([float(t.terms.vocab * t.terms.hidden) for t in ts],
                                [t.line.fields["embedding_loss.bytes"][1] for t in ts])
        with_vocab = [t.line.fields["embedding_loss.ops"][1] for t in ts if t.terms.vocab]
        without = [t.line.fields["embedding_loss.ops"][1] for t in ts if not t.terms.vocab]
        out[group] = oc.ImplementationConstants(
            elementwise_per_layer=round(per_layer, 3), elementwise_fixed=round(fixed, 3),
            elementwise_weights_bytes_per_param=round(weights, 3), elementwise_ops_per_layer=round(ops_per_layer, 3),
            elementwise_ops_fixed=round(ops_fixed, 3), embedding_per_token_hidden=round(per_hidden, 4),
            embedding_per_token_vocab=round(per_vocab, 5), embedding_bytes_per_embedding_param=round(emb_w, 3),
            embedding_ops=round(statistics.mean(with_vocab), 1) if with_vocab else 0.0,
            embedding_ops_no_vocab=round(statistics.mean(without), 1) if without else 0.0)
    return out


def predicted(t: Traced, constants: dict[str, oc.ImplementationConstants]) -> dict[str, tuple[float, float]]:
    return {**oc.exact_fields(t.terms, t.precision),
            **oc.implementation_fields(t.terms, t.precision, constants[precision_group(t.precision)],
                                       t.parameters)}


def _at(fields: dict[str, tuple[float, float]], name: str, batch: int) -> float:
    slope, intercept = fields[name]
    return max(0.0, slope * batch + intercept)


def held_out(traces: Sequence[Traced]) -> list[dict]:
    rows = []
    for model in sorted({t.model for t in traces}):
        constants = fit([t for t in traces if t.model != model])
        for t in (t for t in traces if t.model == model):
            got, b = predicted(t, constants), t.middle_batch
            row = {"model": model, "tokens": t.terms.tokens, "precision": t.precision, "batch": b}
            total = sum(t.line.at(f"{c}.bytes", b) for c in OP_CLASSES)
            for c in OP_CLASSES:  # a class under 1% of the bytes (ViT's loss) has no error worth a figure
                want = t.line.at(f"{c}.bytes", b)
                row[f"{c}_bytes"] = _at(got, f"{c}.bytes", b) / want - 1 if want > 0.01 * total else None
            row["total_bytes"] = sum(_at(got, f"{c}.bytes", b) for c in OP_CLASSES) / total - 1
            ops = sum(t.line.at(f"{c}.ops", b) for c in OP_CLASSES)
            row["ops"] = sum(_at(got, f"{c}.ops", b) for c in OP_CLASSES) / ops - 1
            flops = sum(t.line.at(f"{c}.flops", b) for c in OP_CLASSES)
            row["flops"] = sum(_at(got, f"{c}.flops", b) for c in OP_CLASSES) / flops - 1
            rows.append(row)
    return rows


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:+.1%}"


def lines(rows: Sequence[dict]) -> list[str]:
    out = ["| held-out model | tokens | precision | batch | FLOPs | matmul bytes | attention bytes | elementwise bytes "
           "| embedding + loss bytes | all bytes | ops |", "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r["precision"] not in ("fp32", "bf16"):
            continue  # tf32 and fp16 trace as fp32 and bf16 do (same bytes and ops)
        out.append(f"| {r['model']} | {r['tokens']} | {r['precision']} | {r['batch']} | {_pct(r['flops'])} "
                   f"| {_pct(r['matmul_bytes'])} | {_pct(r['attention_bytes'])} | {_pct(r['elementwise_bytes'])} "
                   f"| {_pct(r['embedding_loss_bytes'])} | {_pct(r['total_bytes'])} | {_pct(r['ops'])} |")
    every = [abs(r["total_bytes"]) for r in rows]
    out.append("")
    out.append(f"All bytes, held out: median |error| {statistics.median(every):.1%}, largest {max(every):.1%} "
               f"({len(rows)} model × precision lines, {len({r['model'] for r in rows})} models).")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--python", action="store_true", help="print the constants as op_classes.CONSTANTS")
    args = p.parse_args(argv)
    traces = load_traces()
    constants = fit(traces)
    if args.python:
        print("CONSTANTS: Mapping[str, ImplementationConstants] = {")
        for group, c in constants.items():
            print(f'    "{group}": ImplementationConstants(')
            items = [f"{k}={v!r}" for k, v in vars(c).items()]
            line = "       "
            for item in items:
                if len(line) + len(item) + 2 > 116:
                    print(line.rstrip())
                    line = "       "
                line += f" {item},"
            print(line.rstrip(",") + "),")
        print("}")
        return 0
    for group, c in constants.items():
        print(f"{group}: {c}")
    print()
    print("\n".join(lines(held_out(traces))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
