"""The experiment of the roofline by operator class: one micro-step split by class (matmul, attention, the rest) at
100% of a GPU's dense peak and bandwidth. Plans do not use it; the calibration measures it held out."""

from __future__ import annotations

from collections.abc import Callable

from planner.engine import calibration, op_classes, steptime
from planner.engine.context import trainable_fraction
from planner.engine.estimates import ResolvedModel
from planner.engine.measurements import OpClassLine, shape_twin_op_classes
from planner.engine.micro import StepContext
from planner.engine.step_formula import transfer_peak
from planner.inputs.profiles import GpuProfile
from planner.inputs.scenario import TrainingSetup


def class_terms(ctx: StepContext, gpu: GpuProfile, precision: str, micro_batch: int) -> calibration.ClassTerms | None:
    """The micro-step by operator class at 100% of this GPU's dense peak and bandwidth (None without a split): the
    model's own trace, else a traced model of the same transformer shape (measurements.shape_twin_op_classes)."""
    # Worked out here, not per plan: only the calibration's measurement (perf/class_roofline.py) reads the split.
    # The first split that counts the scenario's FLOPs: the model's own trace, a traced twin, the shape per layer.
    splits: tuple[Callable[[], dict[str, OpClassLine]], ...] = (
        lambda: dict(ctx.idx.op_classes),
        lambda: shape_twin_op_classes(ctx.inputs.results, ctx.model, ctx.training),
        lambda: _analytic_op_classes(ctx))
    classes: dict[str, OpClassLine] = {}
    for split in splits:
        classes = _same_step(split(), ctx.model, ctx.training)
        if classes:
            break
    line = classes.get(precision)
    peak = transfer_peak(gpu, precision)
    if line is None or not peak:
        return None
    flops_per_s, bytes_per_s = peak * 1e12, gpu.memory_bandwidth_gb_per_s * 1e9
    return calibration.ClassTerms(
        matmul_s=line.at("matmul.flops", micro_batch) / flops_per_s,
        attention_s=line.at("attention.flops", micro_batch) / flops_per_s,
        matmul_bytes_s=line.at("matmul.bytes", micro_batch) / bytes_per_s,
        attention_bytes_s=line.at("attention.bytes", micro_batch) / bytes_per_s,
        other_bytes_s=(line.at("elementwise.bytes", micro_batch) + line.at("embedding_loss.bytes", micro_batch))
        / bytes_per_s)


# A trace's split is the scenario's step only when it counts the same FLOPs (a sequence classifier traced as the
# zoo's masked-LM model carries a vocabulary projection the scenario does not run, for one).
SAME_STEP_FLOPS_TOLERANCE = 0.05


def _analytic_op_classes(ctx: StepContext) -> dict[str, OpClassLine]:
    """A typed transformer shape with neither a trace nor a traced twin: its split per layer (op_classes.py), for
    plain training only, as the twin (recompute, frozen layers and adapters change the op mix)."""
    shape, t = ctx.model.transformer, ctx.training
    if shape is None or t.activation_checkpointing or t.frozen_fraction or t.adapter:
        return {}
    out = {}
    for precision in t.precisions:
        line = op_classes.analytic_op_classes(shape, family=ctx.model.family, precision=precision,
                                              attention=ctx.model.attention, parameters=ctx.model.params)
        if line is not None:
            out[precision] = line
    return out


def _same_step(classes: dict[str, OpClassLine], model: ResolvedModel, training: TrainingSetup) -> dict[str, OpClassLine]:
    """The per-class splits whose traced FLOPs per sample (matmul + attention) match the model's within 5%."""
    want = (model.flops_per_sample or 0.0) * steptime.compute_factor(
        training.activation_checkpointing, trainable_fraction(model, training))
    if want <= 0:
        return {}
    out = {}
    for precision, line in classes.items():
        traced = line.fields["matmul.flops"][0] + line.fields["attention.flops"][0]  # per-sample slopes
        if abs(traced / want - 1.0) <= SAME_STEP_FLOPS_TOLERANCE:
            out[precision] = line
    return out


