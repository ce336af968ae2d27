"""Data-parallel scaling: ring collectives, effective bus bandwidth, exposed gradient communication."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from planner.engine.estimates import ScalingEstimate, Source, detail
from planner.engine.notes import Note
from planner.engine.option import OptionPlan
from planner.vocab import HALF_PRECISIONS, element_bytes

if TYPE_CHECKING:  # type names only: planner.inputs imports yaml, this module stays standard-library only
    from planner.inputs.profiles import GpuProfile
    from planner.inputs.scenario import Hardware, TrainingSetup

# A collective's seconds for (total bytes, ranks, busbw GB/s).
Collective = Callable[[float, int, float], float]

# ---------------------------------------------------------------- constants (editable; each with its source)

# α, per-hop latency of one ring step (kernel launch + NCCL protocol handshake). Assumption consistent with
# nccl-tests small-message all_reduce times of tens of µs on 8 GPUs (2·(n−1)·α = 70 µs at n = 8): it also stands
# in for DDP's 25 MiB buckets sitting below the bandwidth plateau (docs/methods.md#multi-gpu).
ALPHA_S = 5e-6

# Fraction of the per-direction link bandwidth NCCL reaches as all-reduce busbw (docs/methods.md#multi-gpu):
# NVLink4 "900 GB/s" = 450 per direction, NCCL ≈ 370 -> 0.82; A100 NVSwitch (NVLink3) ≈ 200–230 of 300 -> 0.72.
NVLINK_EFFICIENCY = 0.82
NVLINK_EFFICIENCY_BY_GENERATION = {2: 0.72, 3: 0.72}
# AMD Infinity Fabric (xGMI): assumption, below NVSwitch because each peer link is narrow (MI300X: 64 GB/s per
# direction per peer, reference/gpu_reference.md) and RCCL's rings cannot use every link at full rate.
INFINITY_FABRIC_EFFICIENCY = 0.7
# PCIe Gen4 x16: 32 GB/s per direction, all-reduce busbw ≈ 20–25 (docs/methods.md#multi-gpu) -> 0.7.
PCIE_EFFICIENCY = 0.7
# x16 link rate per direction, GB/s, by PCIe generation (PCI-SIG; reference/gpu_reference.md §0 quotes the
# bidirectional totals Gen3 32, Gen4 64, Gen5 128). A bus standard, not a GPU figure.
PCIE_X16_GB_PER_S_PER_DIRECTION = {1: 4.0, 2: 8.0, 3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0, 7: 256.0}
PCIE_GEN_WHEN_UNKNOWN = 3  # the slowest common generation: an unknown link never flatters the plan
# Inter-node busbw ≈ 0.9–0.96 × the node's aggregate NIC bandwidth (docs/methods.md#multi-gpu; DGX-A100 8×200 Gb/s =
# 200 GB/s measures ≈ 192) -> the middle, 0.93.
INTER_NODE_EFFICIENCY = 0.93
# PyTorch DDP's default bucket_cap_mb = 25.
DDP_BUCKET_BYTES = 25 * 2**20
# ZeRO-3/FSDP prefetching hides most gathers behind compute, but the first unit's all-gather and the last unit's
# reduce-scatter cannot overlap; with ~10 wrapped units that is ≈ 10% of the volume (assumption; FSDP paper,
# Zhao et al. 2023, §3.3 on prefetch overlap).
ZERO3_UNOVERLAPPED_FRACTION = 0.1

# Bytes per element of a gradient/parameter in the collective: 16-bit layouts move fp16/bf16 tensors.
COMPRESSION_BYTES = {p: float(element_bytes(p)) for p in HALF_PRECISIONS}  # DDP fp16_/bf16_compress_hook


# ---------------------------------------------------------------- collectives (nccl-tests PERFORMANCE.md)

def ring_allreduce_s(message_bytes: float, n_ranks: int, busbw_gb_s: float, alpha_s: float = ALPHA_S) -> float:
    """Ring all-reduce seconds: 2(n−1)/n · S / busbw + 2(n−1)·α (nccl-tests PERFORMANCE.md); 0 for one rank."""
    if n_ranks < 1:
        raise ValueError(f"n_ranks must be >= 1, got {n_ranks}")
    if n_ranks == 1 or message_bytes <= 0:
        return 0.0
    _check_busbw(busbw_gb_s)
    return 2 * (n_ranks - 1) / n_ranks * message_bytes / (busbw_gb_s * 1e9) + 2 * (n_ranks - 1) * alpha_s


def ring_all_gather_s(total_bytes: float, n_ranks: int, busbw_gb_s: float, alpha_s: float = ALPHA_S) -> float:
    """All-gather (or reduce-scatter) of S bytes in total: (n−1)/n · S / busbw + (n−1)·α (nccl-tests)."""
    if n_ranks <= 1 or total_bytes <= 0:
        return 0.0
    _check_busbw(busbw_gb_s)
    return (n_ranks - 1) / n_ranks * total_bytes / (busbw_gb_s * 1e9) + (n_ranks - 1) * alpha_s


ring_reduce_scatter_s = ring_all_gather_s


def _check_busbw(busbw_gb_s: float) -> None:
    if not busbw_gb_s > 0:
        raise ValueError(f"busbw must be positive, got {busbw_gb_s}")


# ---------------------------------------------------------------- bandwidth

def _nvlink_generation(kind: str) -> int:
    """The NVLink generation named in an interconnect kind ('nvlink4' -> 4); 0 when it names none."""
    match = re.search(r"nvlink\D{0,2}(\d)", kind)
    return int(match.group(1)) if match else 0


def pcie_busbw_gb_s(pcie_gen: int | None) -> tuple[float, Note]:
    gen = pcie_gen if pcie_gen in PCIE_X16_GB_PER_S_PER_DIRECTION else PCIE_GEN_WHEN_UNKNOWN
    per_direction = PCIE_X16_GB_PER_S_PER_DIRECTION[gen]
    busbw = per_direction * PCIE_EFFICIENCY
    said = dict(gen=gen, per_direction=per_direction, eff=PCIE_EFFICIENCY, busbw=busbw)
    return busbw, detail("pcie", **said) if pcie_gen == gen else detail("pcie_assumed", assumed=gen, **said)


def intra_node_busbw_gb_s(gpu: GpuProfile, local_ranks: int) -> tuple[float, tuple[Note, ...]]:
    """busbw among `local_ranks` GPUs of one node, from the profile's interconnect (else PCIe)."""
    link = getattr(gpu, "interconnect", None)
    kind = (getattr(link, "kind", "") or "").lower() if link is not None else ""
    if link is None or not kind:
        busbw, pcie = pcie_busbw_gb_s(gpu.pcie_gen)
        return busbw, (detail("no_link", link=pcie),)
    per_direction = link.per_direction_gb_per_s
    if "pcie" in kind:
        # The profile's own figure knows the lane count (an x8 card moves half of x16).
        busbw = per_direction * PCIE_EFFICIENCY
        return busbw, (detail("link_pcie", kind=link.kind, per_direction=per_direction, eff=PCIE_EFFICIENCY,
                              busbw=busbw),)
    if "bridge" in kind and local_ranks > 2:
        # A bridge joins pairs only: a ring over more GPUs crosses PCIe, the slowest hop sets busbw.
        busbw, pcie = pcie_busbw_gb_s(gpu.pcie_gen)
        return busbw, (detail("pairs_only", kind=link.kind), detail("ring_pcie", n=local_ranks, link=pcie))
    if "nvlink" in kind:
        efficiency = NVLINK_EFFICIENCY_BY_GENERATION.get(_nvlink_generation(kind), NVLINK_EFFICIENCY)
    elif "infinity" in kind or "xgmi" in kind:
        efficiency = INFINITY_FABRIC_EFFICIENCY
    else:
        efficiency = NVLINK_EFFICIENCY
    busbw = per_direction * efficiency
    return busbw, (detail("link", kind=link.kind, per_direction=per_direction,
                          bidirectional=link.bidirectional_gb_per_s, eff=efficiency, busbw=busbw),)


def node_layout(n_gpus: int, gpus_per_node: int) -> tuple[int, int | None]:
    """(nodes, GPUs per node) for n GPUs packed onto nodes; per-node None when they do not split evenly."""
    nodes = math.ceil(n_gpus / gpus_per_node)
    return nodes, (n_gpus // nodes if n_gpus % nodes == 0 else None)


def effective_busbw_gb_s(gpu: GpuProfile, n_gpus: int, gpus_per_node: int,
                         inter_node_gb_per_s: float) -> tuple[float, tuple[Note, ...]]:
    """Ring all-reduce busbw per GPU, GB/s (one direction), and the parts explaining it (docs/methods.md#multi-gpu).

    Within a node: the interconnect's per-direction rate × NCCL efficiency (PCIe when there is no link).
    Across nodes, NCCL runs one ring per NIC (channel) and each ring crosses each node boundary once, carrying
    1/rings of the data: the node's inter-node traffic is spread over ALL its NICs, so busbw is limited by the
    node's AGGREGATE NIC bandwidth (not per GPU): 0.93 × inter_node_gb_per_s, capped by the intra-node figure.
    Check: DGX-A100, 8 × 200 Gb/s = 200 GB/s -> 186 (measured ≈ 192).
    """
    if n_gpus < 1 or gpus_per_node < 1:
        raise ValueError(f"need n_gpus >= 1 and gpus_per_node >= 1 (got {n_gpus}, {gpus_per_node})")
    local = min(n_gpus, gpus_per_node)
    nodes = math.ceil(n_gpus / gpus_per_node)
    if n_gpus == 1:
        busbw, link = intra_node_busbw_gb_s(gpu, 2)
        return busbw, (detail("single_gpu_link", link=link),)
    # One GPU per node has no intra-node hop: only the NICs limit the ring.
    intra, link = (math.inf, (detail("one_per_node"),)) if local == 1 else intra_node_busbw_gb_s(gpu, local)
    if nodes == 1:
        return intra, (detail("in_node", n=n_gpus, link=link),)
    if not inter_node_gb_per_s > 0:
        raise ValueError(f"inter_node_gb_per_s must be positive, got {inter_node_gb_per_s}")
    inter = INTER_NODE_EFFICIENCY * inter_node_gb_per_s
    nic = dict(nodes=nodes, eff=INTER_NODE_EFFICIENCY, nic=inter_node_gb_per_s, busbw=inter, link=link)
    if inter < intra:
        return inter, (detail("nic", **nic),)
    return intra, (detail("nic_above", **nic),)


# ---------------------------------------------------------------- bytes and times

def grad_sync_bytes(trainable_params: int, precision: str, state_layout: str, compression: str | None = None) -> float:
    """Bytes all-reduced per step, S = T × grad_bytes_per_param (docs/methods.md#multi-gpu)."""
    return grad_bytes_per_param(precision, state_layout, compression) * trainable_params


def grad_bytes_per_param(precision: str, state_layout: str, compression: str | None = None) -> float:
    """Bytes per trainable parameter a gradient collective moves (docs/methods.md#multi-gpu and docs/methods.md#memory's layout table).

    torch_amp keeps fp32 params, so grads are fp32 at every precision: 4 B. 16-bit gradients (2 B) with
    fp16/bf16 under zero_paper, deepspeed and pure_bf16, and under megatron with fp16; megatron bf16 keeps fp32
    main grads (its "bf16 + fp32 grads, 18 B" row), so 4 B. A DDP compression hook (fp16/bf16) sends 2 B.
    """
    if state_layout == "torch_amp":
        per_param = float(element_bytes("fp32"))
    elif state_layout in ("zero_paper", "deepspeed", "pure_bf16"):
        per_param = float(element_bytes(precision))
    elif state_layout == "megatron":
        per_param = 2.0 if precision == "fp16" else 4.0
    else:
        raise ValueError(f"unknown state_layout {state_layout!r}")
    if compression is not None:
        if compression not in COMPRESSION_BYTES:
            raise ValueError(f"unknown compression {compression!r}; expected one of {', '.join(COMPRESSION_BYTES)}")
        per_param = min(per_param, COMPRESSION_BYTES[compression])
    return per_param


def param_gather_bytes_per_param(precision: str, state_layout: str) -> float:
    """Bytes per parameter a ZeRO all-gather moves: fp32 params under torch_amp, else the precision's own
    (vocab.element_bytes: fp32 and tf32 4 B, fp16 and bf16 2 B)."""
    return float(element_bytes("fp32" if state_layout == "torch_amp" else precision))


def _bucketed_comm_s(sync_bytes: float, n: int, busbw: float, *, backward_s: float, bucket_bytes: float,
                     collective: Collective) -> tuple[float, float]:
    """(exposed_s, total_s) of a collective run bucket by bucket while backward runs.

    total = Σ over ⌈S/bucket⌉ buckets (each pays its own latency); exposed ≈ max(t_last_bucket,
    t_total − t_backward): buckets go while backward runs, but the last starts only when backward ends.
    """
    if bucket_bytes <= 0 or backward_s < 0:
        raise ValueError(f"need bucket_bytes > 0 and backward_s >= 0 (got {bucket_bytes}, {backward_s})")
    if n <= 1 or sync_bytes <= 0:
        return 0.0, 0.0
    n_buckets = math.ceil(sync_bytes / bucket_bytes)
    last_bucket = sync_bytes - (n_buckets - 1) * bucket_bytes
    last = collective(last_bucket, n, busbw)
    total = (n_buckets - 1) * collective(bucket_bytes, n, busbw) + last
    return max(last, total - backward_s), total


def ddp_exposed_comm_s(
    sync_bytes: float, n: int, busbw: float, *, backward_s: float, grad_accum: int = 1,
    bucket_bytes: float = DDP_BUCKET_BYTES,
) -> tuple[float, float]:
    """(exposed_s, allreduce_s) of DDP's bucketed all-reduce for one optimizer step (docs/methods.md#multi-gpu).

    allreduce_s = Σ over ⌈S/bucket⌉ buckets of the ring time (so each bucket pays its 2(n−1)·α latency);
    exposed ≈ max(t_last_bucket, t_allreduce − t_backward). `backward_s` is ONE micro-step's backward: with
    accumulation k > 1 the first k−1 micro-steps run under no_sync (no communication), so only the last
    backward overlaps and the result does not depend on k.
    """
    if grad_accum < 1:
        raise ValueError(f"grad_accum must be >= 1, got {grad_accum}")
    return _bucketed_comm_s(sync_bytes, n, busbw, backward_s=backward_s, bucket_bytes=bucket_bytes,
                            collective=ring_allreduce_s)


def fsdp_comm_s(params: int, trainable: int, *, param_bytes: float, grad_bytes: float, n: int, busbw: float,
                grad_accum: int = 1) -> float:
    """ZeRO-3/FSDP communication seconds for one optimizer step of `grad_accum` micro-steps (docs/methods.md#multi-gpu).

    Each micro-step all-gathers every parameter twice (forward, and again in backward after resharding) at
    `param_bytes` per parameter; the trainable gradients are reduce-scattered once per step at `grad_bytes`
    (no_sync on the other micro-steps); each collective is (n−1)/n · S / busbw + (n−1)α.
    ZeRO-1/2 move the same volume as a DDP all-reduce (reduce-scatter grads + all-gather updated params).
    """
    if grad_accum < 1:
        raise ValueError(f"grad_accum must be >= 1, got {grad_accum}")
    gather = ring_all_gather_s(params * param_bytes, n, busbw)
    scatter = ring_reduce_scatter_s(trainable * grad_bytes, n, busbw)
    return grad_accum * (2 * gather) + scatter


# ---------------------------------------------------------------- measured DDP results

def _matches(section: Mapping[str, Any], gpu_id: str, n_gpus: int, gpus_per_node: int) -> bool:
    """A bench ddp section applies only to the same GPU, NCCL, and the same node layout (docs/methods.md#multi-gpu)."""
    nodes, per_node = node_layout(n_gpus, gpus_per_node)
    return (
        section.get("backend") == "nccl"
        and section.get("gpu_profile_id") == gpu_id
        and section.get("nnodes") == nodes
        and per_node is not None
        and section.get("nproc_per_node") == per_node
    )


def select_measured_ddp(
    ddp_sections: Sequence[tuple[str, Mapping[str, Any]]], gpu_id: str, n_gpus: int, gpus_per_node: int
) -> tuple[str, Mapping[str, Any]] | None:
    """The first (label, section) measured on this GPU with NCCL and this node layout; gloo/CPU runs never match.

    The caller passes sections of the planned model only, in order of preference (e.g. newest first).
    """
    for label, section in ddp_sections:
        if isinstance(section, Mapping) and _matches(section, gpu_id, n_gpus, gpus_per_node):
            return label, section
    return None


def _measured_exposed_s(section: Mapping[str, Any]) -> float | None:
    exposed = section.get("exposed_comm_s")
    if exposed is not None:
        return max(float(exposed), 0.0)
    t1, tn = section.get("step_time_1_s"), section.get("step_time_n_s")
    if t1 is not None and tn is not None:
        return max(float(tn) - float(t1), 0.0)
    return None


# ---------------------------------------------------------------- one plan option

def _formula_comm(training: TrainingSetup, option: OptionPlan, *, busbw: float, trainable_params: int,
                  params: int, micro_step_s: float, backward_s: float) -> tuple[float, float, Note]:
    """(exposed_s, comm_s, description) per optimizer step for the setup's sharding."""
    layout, precision, n, grad_accum = training.state_layout, option.precision, option.n_gpus, option.grad_accum
    sync = grad_sync_bytes(trainable_params, precision, layout)
    if training.sharding == "zero3":
        param_bytes = param_gather_bytes_per_param(precision, layout)
        comm = fsdp_comm_s(params, trainable_params, param_bytes=param_bytes,
                           grad_bytes=grad_bytes_per_param(precision, layout), n=n, busbw=busbw,
                           grad_accum=grad_accum)
        exposed = max(ZERO3_UNOVERLAPPED_FRACTION * comm, comm - grad_accum * micro_step_s)
        what = detail("zero", stage=3, gather=params * param_bytes / 1e6, scatter=sync / 1e6)
        return exposed, comm, what
    if training.sharding in ("zero1", "zero2"):
        # Same volume as DDP: the reduce-scatter overlaps backward like DDP's buckets; the all-gather of the
        # updated parameters follows the optimizer step and is exposed.
        rs_exposed, rs = _bucketed_comm_s(sync, n, busbw, backward_s=backward_s, bucket_bytes=DDP_BUCKET_BYTES,
                                          collective=ring_reduce_scatter_s)
        ag = ring_all_gather_s(trainable_params * param_gather_bytes_per_param(precision, layout), n, busbw)
        what = detail("zero_shard", sharding=training.sharding, mb=sync / 1e6)
        return rs_exposed + ag, rs + ag, what
    exposed, allreduce = ddp_exposed_comm_s(sync, n, busbw, backward_s=backward_s, grad_accum=grad_accum)
    buckets = math.ceil(sync / DDP_BUCKET_BYTES) if sync > 0 else 0
    what = detail("ddp", mb=sync / 1e6, n=buckets, mib=DDP_BUCKET_BYTES / 2**20)
    return exposed, allreduce, what


def estimate_scaling(
    option: OptionPlan, training: TrainingSetup, hardware: Hardware, *, trainable_params: int, params: int,
    micro_step_s: float, optimizer_s: float = 0.0, backward_fraction: float = 2 / 3,
    measured_ddp: Mapping[str, Any] | None = None, measured_label: str = "bench ddp result",
) -> ScalingEstimate:
    """Data-parallel efficiency and exposed communication for one GPU type × count (docs/methods.md#multi-gpu).

    `micro_step_s` is one micro-step's forward+backward; backward = backward_fraction × it. One step on one GPU
    is t_1 = k·micro + optimizer (k = option.grad_accum); on n GPUs t_n = t_1 + exposed; efficiency = t_1/t_n
    for the same per-GPU work. A measured `ddp` section replaces the formula only when it was run on this GPU
    with NCCL and the same node layout; the formula's step time stays in formula_step_time_s so both can be shown.
    """
    gpu, n_gpus, grad_accum = option.gpu, option.n_gpus, option.grad_accum
    if n_gpus < 1 or grad_accum < 1 or micro_step_s < 0 or not 0 <= backward_fraction <= 1:
        raise ValueError(f"bad scaling input: n_gpus={n_gpus}, grad_accum={grad_accum}, "
                         f"micro_step_s={micro_step_s}, backward_fraction={backward_fraction}")
    t_1 = grad_accum * micro_step_s + optimizer_s
    if n_gpus == 1:
        return ScalingEstimate(Source("analytic", parts=(detail("single_gpu"),)), 1.0, 0.0, 0.0, t_1)
    busbw, bw_how = effective_busbw_gb_s(gpu, n_gpus, hardware.gpus_per_node, hardware.inter_node_gb_per_s)
    exposed, comm, what = _formula_comm(training, option, busbw=busbw, trainable_params=trainable_params,
                                        params=params, micro_step_s=micro_step_s,
                                        backward_s=backward_fraction * micro_step_s)
    formula_step = t_1 + exposed
    formula = (what, detail("busbw", busbw=busbw, how=bw_how), detail("exposed", exposed=exposed * 1e3, total=comm * 1e3))
    if measured_ddp is not None and _matches(measured_ddp, gpu.id, n_gpus, hardware.gpus_per_node):
        measured_exposed = _measured_exposed_s(measured_ddp)
        if measured_exposed is not None:
            file_eff = measured_ddp.get("efficiency")
            exposed_part = detail("ddp_measured_exposed", ms=measured_exposed * 1e3) if file_eff is None else \
                detail("ddp_measured_exposed_eff", ms=measured_exposed * 1e3, eff=float(file_eff))
            parts = (detail("ddp_measured", label=measured_label, nnodes=measured_ddp.get("nnodes"),
                            nproc=measured_ddp.get("nproc_per_node"), gpu=gpu.id),
                     exposed_part, detail("formula", what=formula[0]), *formula[1:])
            t_n = t_1 + measured_exposed
            efficiency = t_1 / t_n if t_n > 0 else 1.0
            return ScalingEstimate(Source("measured", parts=parts), efficiency, measured_exposed, comm, formula_step)
    efficiency = t_1 / formula_step if formula_step > 0 else 1.0
    return ScalingEstimate(Source("analytic", parts=formula), efficiency, exposed, comm, formula_step)
