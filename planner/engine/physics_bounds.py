"""The physics bounds of a micro-step's time (docs/methods.md#step-time "Bounds"): the one owner of what no estimate
may claim, whatever path it took (issue 32 e; the data-trust and runs issues reuse it).

1. **Peak**: forward + backward can do no more model FLOPs per second than the GPU's dense peak at the precision
   (the datasheet's figure, gpu_profiles/): no time, and no low end of a range, faster than F / P.
2. **Dominance**: a GPU that matches or beats another in dense peak at the precision and in memory bandwidth (and
   beats it in one) is never planned slower than it for the same micro-step: neither its time nor its range's high
   end exceeds the other's. The order is strict, so the comparison never loops.

3. **A measured figure** (issue 34) is read but not used when it lies outside [F / P, F / (P × SLOWEST_MFU) +
   SLOWEST_FIXED_S] (plausible_micro_s): faster than the peak allows, or slower than any GPU run of that work.

The input floor (no step faster than its data loading) acts on the whole step: steptime.assemble_step clamps the
step and both ends of its range to it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from planner.engine import steptime
from planner.engine.estimates import Micro, Source, detail
from planner.inputs.profiles import GpuProfile

# Ampere GA10x (8.6) and Ada (8.9) print an fp32 peak that counts both FP32 datapaths; one of them also
# executes the INT32 work (addressing) real kernels need, so they reach about half of it (NVIDIA GA102
# whitepaper, "2x FP32"). Planning assumption; a measurement on the card replaces it.
DUAL_ISSUE_FP32_CC = ("8.6", "8.9")
DUAL_ISSUE_FP32_FACTOR = 0.5


def transfer_peak(gpu: GpuProfile, precision: str) -> float | None:
    """The dense peak the step time divides by and a transfer scales by: the datasheet's, × the share a
    power-limited card sustains (the profile's `sustained`, cited), and for the dual-issue fp32 peak of Ampere
    GA10x/Ada × DUAL_ISSUE_FP32_FACTOR as in the analytic time, so fp32 transfers to and from them agree with it."""
    peak = gpu.peak_tflops_for(precision)
    if peak and gpu.sustained is not None:
        peak *= gpu.sustained.fraction
    if peak and precision == "fp32" and gpu.compute_capability in DUAL_ISSUE_FP32_CC:
        return peak * DUAL_ISSUE_FP32_FACTOR
    return peak


def dominates(a: GpuProfile, b: GpuProfile, precision: str) -> bool:
    """True when `a` has at least `b`'s dense peak at `precision` (dual-issue fp32 counted as the transfer counts it)
    and at least its memory bandwidth, and more of one of them."""
    return _dominates_by(transfer_peak(a, precision), a.memory_bandwidth_gb_per_s,
                         transfer_peak(b, precision), b.memory_bandwidth_gb_per_s)


def _dominates_by(pa: float | None, ba: float, pb: float | None, bb: float) -> bool:
    """dominates on the two GPUs' peaks (transfer_peak) and bandwidths."""
    if not pa or not pb:
        return False
    return pa >= pb and ba >= bb and (pa > pb or ba > bb)


def peak_floor_s(flops: float, gpu: GpuProfile, precision: str) -> float:
    """Seconds of forward + backward at 100 % of the dense peak: no time is shorter (0 when the peak is unknown)."""
    peak = gpu.peak_tflops_for(precision)
    return flops / (peak * 1e12) if peak and flops > 0 else 0.0


# The slowest a measured one-GPU micro-step may be and still be read as a GPU's time (an assumption, on purpose
# generous): its forward + backward at 0.1 % of the dense peak, plus one second of host time (10^5 kernel launches
# at 10 us). The slowest runs the planner knows, launch-bound small models, stay above 1 % of peak or under a
# second; a figure past it is a unit error (milliseconds written as seconds) or a broken clock.
SLOWEST_MFU = 1e-3
SLOWEST_FIXED_S = 1.0


def plausible_micro_s(flops: float, gpu: GpuProfile, precision: str) -> tuple[float, float]:
    """(fastest, slowest) seconds a measured micro-step of `flops` model FLOPs on `gpu` may take: the peak floor
    (peak_floor_s) and the slowest plausible run (SLOWEST_MFU of the peak the time divides by, + SLOWEST_FIXED_S).
    (0, inf) when the FLOPs or the peak are unknown: nothing to check against."""
    peak = transfer_peak(gpu, precision)
    if not peak or not flops > 0:
        return 0.0, math.inf
    return peak_floor_s(flops, gpu, precision), flops / (peak * 1e12 * SLOWEST_MFU) + SLOWEST_FIXED_S


def typical_micro_s(flops: float, gpu: GpuProfile, precision: str, *, family: str) -> float | None:
    """The physics estimate of a micro-step, from nothing measured: F / (P × the family's default MFU)
    (docs/methods.md#step-time, path 4; steptime.default_mfu), P the peak the time divides by. None when the FLOPs
    or the peak are unknown. Two measurements that disagree are judged by how near each lies to it."""
    peak = transfer_peak(gpu, precision)
    if not peak or not flops > 0:
        return None
    return steptime.analytic_micro_step(flops, peak, steptime.default_mfu(family, precision))


def dominated(profiles: Mapping[str, GpuProfile], gpu_id: str, precision: str) -> tuple[str, ...]:
    """The GPUs `gpu_id` dominates at `precision` (dominates), in id order."""
    gpu = profiles[gpu_id]
    return tuple(g for g in sorted(profiles) if g != gpu_id and dominates(gpu, profiles[g], precision))


def dominated_by_gpu(profiles: Mapping[str, GpuProfile], precision: str) -> dict[str, tuple[str, ...]]:
    """dominated for every GPU of `profiles` at once: each GPU's peak read once, not once per pair (issue 38)."""
    ids = sorted(profiles)
    sides = {g: (transfer_peak(profiles[g], precision), profiles[g].memory_bandwidth_gb_per_s) for g in ids}
    return {g: tuple(o for o in ids if o != g and _dominates_by(*sides[g], *sides[o])) for g in ids}


def bounded_micro(m: Micro, *, gpu: GpuProfile, precision: str, flops: float,
                  profiles: Mapping[str, GpuProfile], below: Sequence[str],
                  time_on: Callable[[str], Micro | None]) -> Micro:
    """`m` (one micro-step on `gpu`) within the bounds above, which act on its forward + backward (each GPU keeps
    its own optimizer step). `time_on(gpu_id)` gives the same micro-step on another GPU (None when it cannot be
    estimated there); `below`: the GPUs it dominates (dominated). Each bound that moved the time says so in the
    source."""
    inside = m.outside_s()
    work, (low, high) = m.seconds - inside, (m.band[0] - inside, m.band[1] - inside)
    parts = list(m.source.parts)
    floor = peak_floor_s(flops, gpu, precision)
    if work < floor:
        parts.append(detail("bound_peak", duration=floor, flops=flops, peak=gpu.peak_tflops_for(precision),
                            precision=precision))
        work = floor
    low = max(low, floor)
    for other_id in below:
        other = profiles[other_id]
        there = time_on(other_id)
        if there is None:
            continue
        there_inside = there.outside_s()
        if work > (there.seconds - there_inside) * (1.0 + 1e-9):
            work = there.seconds - there_inside
            parts.append(detail("bound_dominance", gpu=other.name, precision=precision, duration=work))
        high = min(high, there.band[1] - there_inside)
    low, high = min(low, work), max(high, work)
    if len(parts) == len(m.source.parts) and (low + inside, high + inside) == m.band:
        return m
    return replace(m, seconds=work + inside, band=(low + inside, high + inside),
                   source=Source(m.source.kind, parts=tuple(parts)))
