"""The project's vocabulary: one owner for every list of names and unit constant (planner, bench and ui import it)."""

from __future__ import annotations

from typing import Literal

# The project's version: planner.__version__, result files' trainplan_version and both CLIs' --version say it.
VERSION = "0.1.0"

# Training precisions a scenario, a benchmark and a plan option can name (docs/methods.md#step-time).
Precision = Literal["fp32", "tf32", "fp16", "bf16"]
PRECISIONS: tuple[Precision, ...] = ("fp32", "tf32", "fp16", "bf16")
# Keys of a GPU profile's dense peak table: the training precisions plus fp8 (informational for now).
PEAK_KEYS: tuple[str, ...] = (*PRECISIONS, "fp8")
# Equal cost and time (e.g. an input-bound run): prefer bf16 (no loss scaling), then fp16, tf32, fp32.
PRECISION_PREFERENCE: dict[str, int] = {"bf16": 0, "fp16": 1, "tf32": 2, "fp32": 3}
# What a precision stores, the one owner of "bytes per element" (memory, activations, operator classes, step time
# and communication all read it). tf32 is stored as fp32: only the tensor cores round a matmul's inputs to a 10-bit
# mantissa, its tensors, gradients and collectives stay 4-byte fp32 (NVIDIA A100 Tensor Core GPU Architecture
# whitepaper, "TF32"; PyTorch docs, "TensorFloat-32 (TF32) on Ampere (and later) devices"). The group is also the key
# of constants fitted per storage kind (calibration.op_classes.CONSTANTS, engine.steptime.TRANSFORMER_OPS).
PrecisionGroup = Literal["fp32", "16-bit"]
PRECISION_GROUPS: dict[Precision, PrecisionGroup] = {"fp32": "fp32", "tf32": "fp32", "fp16": "16-bit",
                                                     "bf16": "16-bit"}
GROUP_ELEMENT_BYTES: dict[PrecisionGroup, int] = {"fp32": 4, "16-bit": 2}
# The 16-bit precisions: torch autocast computes in them, FlashAttention runs only in them.
HALF_PRECISIONS: tuple[Precision, ...] = tuple(p for p in PRECISIONS if PRECISION_GROUPS[p] == "16-bit")


def precision_group(precision: str) -> PrecisionGroup:
    """'fp32' for fp32 and tf32 (fp32 storage), '16-bit' for fp16 and bf16; ValueError for another name."""
    if precision not in PRECISION_GROUPS:
        raise ValueError(f"unknown precision {precision!r}; expected one of {', '.join(PRECISIONS)}")
    return PRECISION_GROUPS[precision]


def element_bytes(precision: str) -> int:
    """Bytes one tensor element of `precision` takes in memory and on the wire: 4 for fp32 and tf32, 2 for 16-bit."""
    return GROUP_ELEMENT_BYTES[precision_group(precision)]

Optimizer = Literal["sgd", "sgd_momentum", "adam", "adamw", "adafactor", "adam8bit"]
OPTIMIZERS: tuple[Optimizer, ...] = ("sgd", "sgd_momentum", "adam", "adamw", "adafactor", "adam8bit")
SGD_FAMILY: tuple[Optimizer, ...] = ("sgd", "sgd_momentum")
# What `bench trace` can build on fake tensors (bitsandbytes' 8-bit Adam has no fake-tensor kernels).
TRACEABLE_OPTIMIZERS: tuple[Optimizer, ...] = ("sgd", "sgd_momentum", "adam", "adamw", "adafactor")
# foreach: multi-tensor kernels (PyTorch's CUDA default); fused: one kernel; for_loop: one parameter at a time
# (torch.optim with foreach=False, Hugging Face's older transformers.AdamW).
OptimizerImpl = Literal["foreach", "fused", "for_loop"]
OPTIMIZER_IMPLS: tuple[OptimizerImpl, ...] = ("foreach", "fused", "for_loop")

Sharding = Literal["none", "zero1", "zero2", "zero3"]
SHARDINGS: tuple[Sharding, ...] = ("none", "zero1", "zero2", "zero3")
StateLayout = Literal["torch_amp", "zero_paper", "deepspeed", "megatron", "pure_bf16"]
STATE_LAYOUTS: tuple[StateLayout, ...] = ("torch_amp", "zero_paper", "deepspeed", "megatron", "pure_bf16")

AdapterKind = Literal["lora", "qlora"]
ADAPTER_KINDS: tuple[AdapterKind, ...] = ("lora", "qlora")
ADAPTER_TARGETS: tuple[str, ...] = ("attention", "qv", "all_linear")
BASE_DTYPES: tuple[str, ...] = ("bf16", "fp16", "int8", "nf4", "nf4_dq")  # nf4_dq: with double quantisation
QUANTIZED_BASE_DTYPES: tuple[str, ...] = ("int8", "nf4", "nf4_dq")
# The base an adapter kind means when base_dtype is not given (issue 33): QLoRA is a 4-bit NormalFloat base (Dettmers
# et al. 2023, §2), LoRA a 16-bit one. The app's LoRA/QLoRA switch moves the base to its kind's when it does not
# belong to it (a 16-bit base under QLoRA, a quantised one under LoRA).
ADAPTER_DEFAULT_BASE: dict[str, str] = {"lora": "bf16", "qlora": "nf4"}


def adapter_base_for(kind: str, base_dtype: str | None) -> str:
    """The base an adapter of `kind` plans with: `base_dtype` when it belongs to the kind (QLoRA: a quantised base;
    LoRA: any), else the kind's default (ADAPTER_DEFAULT_BASE)."""
    if base_dtype is None or (kind == "qlora" and base_dtype not in QUANTIZED_BASE_DTYPES):
        return ADAPTER_DEFAULT_BASE.get(kind, "bf16")
    return base_dtype
# The state layout a scenario that names none plans with, by its training.stack (issue 33: "FSDP mixed-precision
# layouts as the stacks ship them"). Only stacks that fix the layout move it; everything else keeps torch_amp (fp32
# parameters, gradients and AdamW moments: what PyTorch FSDP keeps for the optimizer step, since "outside forward and
# backward, the *sharded* parameters are kept in full precision", torch.distributed.fsdp.MixedPrecision docstring;
# what Accelerate keeps since it upcasts a low-precision model to fp32 under FSDP mixed precision, huggingface/
# accelerate#2674, v0.30; LitGPT's training default bf16-mixed, Lightning-AI/litgpt@d49df208:litgpt/utils.py
# get_default_supported_precision). Not moved: llm_recipe holds torchtune (bf16 weights, gradients and optimizer
# states, no fp32 master: pytorch/torchtune@1814feb1 recipes/full_finetune_single_device.py docstring L59-L61) and
# LitGPT bf16-true beside LitGPT's bf16-mixed default, so the stack does not say which: such runs write
# `state_layout: pure_bf16`. Why each moved one: docs/methods.md#memory ("The default layout follows the stack").
STACK_STATE_LAYOUTS: dict[str, tuple[tuple[tuple[Sharding, ...], StateLayout], ...]] = {
    # DeepSpeed's ZeRO optimizers keep fp32 master weights and moments beside 16-bit weights and gradients
    # (Rajbhandari et al. 2020 §3, K = 12); under ZeRO-2/3 its own estimator's figures (the `deepspeed` layout).
    "deepspeed": ((("zero2", "zero3"), "deepspeed"), (("none", "zero1"), "zero_paper")),
    # Megatron-LM's mixed precision: fp32 main parameters and gradients (distributed optimizer = zero1); it has no
    # ZeRO-2/3 of its own, so a sharded scenario keeps torch_amp.
    "megatron": ((("none", "zero1"), "megatron"),),
}


def stack_state_layout(stack: str | None, sharding: str) -> StateLayout:
    """The layout a scenario without `training.state_layout` plans with: its stack's (STACK_STATE_LAYOUTS), where
    the stack fixes one for this sharding, else torch_amp."""
    for shardings, layout in STACK_STATE_LAYOUTS.get(stack or "", ()):
        if sharding in shardings:
            return layout
    return "torch_amp"


MLP_KINDS: tuple[str, ...] = ("gelu", "swiglu")
# Model families: the default MFU row (planner.engine.steptime.DEFAULT_MFU), the workspace assumption (cnn: cuDNN)
# and the analytic operator-class split read them; the zoo and the corpus say each model's, a scenario may too.
MODEL_FAMILIES: tuple[str, ...] = ("cnn", "vit", "encoder", "decoder", "rnn", "mlp", "custom")
NORM_KINDS: tuple[str, ...] = ("layernorm", "rmsnorm")
# The moment of a training step that sets its memory peak (planner.engine.memory.peak_parts).
MemoryPhase = Literal["backward", "optimizer_step"]
MEMORY_PHASES: tuple[MemoryPhase, ...] = ("backward", "optimizer_step")
# The memory verdict of an option (MemoryEstimate.verdict; docs/methods.md#memory "Verdict"): within the band of the
# memory model's held-out error around the capacity it is borderline (issue 33).
MemoryVerdict = Literal["fits", "borderline", "does_not_fit"]
MEMORY_VERDICTS: tuple[MemoryVerdict, ...] = ("fits", "borderline", "does_not_fit")
# standard: the full logits and an fp32 log-softmax exist for backward; chunked: a fused/chunked cross-entropy
# (Liger's fused linear cross-entropy, torchtune's chunked loss) never materialises the whole logits; sequence: a
# sequence-level head (classification, regression) with no logits over the vocabulary at all; chunked_fp32: the head
# and cross-entropy run in chunks but every chunk's logits are kept in fp32 (LitGPT's lm_head_chunk_size under
# Lightning Fabric, whose convert_output casts the model's output list to fp32) with an fp32 log-softmax per chunk.
LOSS_KINDS: tuple[str, ...] = ("standard", "chunked", "sequence", "chunked_fp32")
# How attention's q, k, v come out of the block's projections. separate: q_proj, k_proj, v_proj (Hugging Face
# Llama/Mistral); fused: one projection whose q, k, v are views (GPT-2's c_attn, timm ViT); fused_rope: one projection,
# RoPE makes new q and k while v stays a view of the fused output, so attention keeps the whole q|k|v buffer
# besides the rotated q and k (LitGPT's CausalSelfAttention with multi-head attention).
QKV_LAYOUTS: tuple[str, ...] = ("separate", "fused", "fused_rope")

# Pricing tiers: the four a quote can carry, plus on_prem (priced from purchase and power, not from a quote).
RentalTier = Literal["on_demand", "spot", "reserved_1y", "reserved_3y"]
RENTAL_TIERS: tuple[RentalTier, ...] = ("on_demand", "spot", "reserved_1y", "reserved_3y")
Tier = Literal["on_demand", "spot", "reserved_1y", "reserved_3y", "on_prem"]
TIERS: tuple[Tier, ...] = (*RENTAL_TIERS, "on_prem")

# Price freshness (issue 17), one rule for every quote: the newest quote per provider, instance, region and tier
# wins (planner.inputs.profiles.newer_quote); a quote older than this many days, or with no date, is flagged stale.
QUOTE_MAX_AGE_DAYS = 180
# An exchange rate older than this many days is flagged (rates move within weeks; quotes within months).
EXCHANGE_RATE_MAX_AGE_DAYS = 30
# A price refresh (python -m planner prices refresh) reports an offer's price as changed when it moved by more than
# this fraction of the price the planner had (smaller moves are day-to-day noise of spot and marketplace prices).
PRICE_CHANGE_REPORT_FRACTION = 0.10

# Where a rented GPU may be (issue 17): pricing.region_group keeps the quotes of one group of cloud regions
# (planner.inputs.regions says which region names belong to which); "any" keeps every quote, so the cheapest wins.
RegionGroup = Literal["any", "latam", "us", "eu"]
REGION_GROUPS: tuple[RegionGroup, ...] = ("any", "latam", "us", "eu")

# Where a scenario's dataset lives today (workload.data_location; planner/engine/datacost.py): your own machines, a
# provider the shipped data knows (the price quotes' providers and gpu_profiles/catalog/storage.yaml's; a test keeps
# this list a superset of both), or "other" for anywhere else (no egress counted, and the plan says so). A misspelled
# provider is refused with this list: it used to drop the egress cost with only a note (issue 34).
DATA_LOCAL: tuple[str, ...] = ("local", "on_prem")
DATA_OTHER = "other"
DATA_PROVIDERS: tuple[str, ...] = ("aws", "azure", "coreweave", "gcp", "hyperstack", "lambda", "nebius", "oracle",
                                   "runpod", "tensorwave", "vast", "verda", "vultr")
DATA_LOCATIONS: tuple[str, ...] = (*DATA_LOCAL, *DATA_PROVIDERS, DATA_OTHER)
# Spellings the reader accepted before the list, read as the listed value.
DATA_LOCATION_ALIASES: dict[str, str] = {"on-prem": "on_prem"}

# How a multi-GPU option's GPUs are rented, so its time and its price assume the same hardware (issue 18):
# one_node = every GPU in one instance (NVLink/PCIe between them); multi_node = whole multi-GPU nodes over the
# scenario's inter-node network; separate_nodes = several small instances over the provider's network between them.
Topology = Literal["one_node", "separate_nodes", "multi_node"]
TOPOLOGIES: tuple[Topology, ...] = ("one_node", "separate_nodes", "multi_node")

# Which hours must meet the deadline (constraints.deadline_confidence): p90 = the high end of the option's range
# (it finishes in time 9 times in 10), p50 = the likely hours.
DeadlineConfidence = Literal["p50", "p90"]
DEADLINE_CONFIDENCES: tuple[DeadlineConfidence, ...] = ("p50", "p90")
# What counts against an option in the recommendation (planner.engine.recommend.option_risks): memory under 10%
# headroom, a published price older than QUOTE_MAX_AGE_DAYS, a published price with no date.
RISKS: tuple[str, ...] = ("tight_memory", "stale_price", "undated_price")

# Where a figure came from (DESIGN.md): every number that reaches a user carries one of these.
SourceKind = Literal["measured", "interpolated", "extrapolated", "transferred", "traced", "analytic", "published",
                     "user"]
SOURCE_KINDS: tuple[SourceKind, ...] = ("measured", "interpolated", "extrapolated", "transferred", "traced",
                                        "analytic", "published", "user")
# Kinds that rest on a real run of this model (memory from such a file is a measurement, not a formula).
MEASURED_KINDS: tuple[SourceKind, ...] = ("measured", "interpolated", "extrapolated", "transferred")

# Result files (schema trainplan.bench/2, planner/inputs/resultfile.py): where a measurement came from and, for a
# published figure, what it means. A measurement's `source` is one of PROVENANCE_KINDS.
ProvenanceKind = Literal["measured", "traced", "published"]
PROVENANCE_KINDS: tuple[ProvenanceKind, ...] = ("measured", "traced", "published")
# The software stack a run used (scenario training.stack, a result file's provenance.stack, a corpus excerpt's
# stack): the same model on the same GPU runs at very different speeds under each (docs/methods.md#step-time).
#   pytorch_eager     plain PyTorch, eager mode: a hand-written loop, torchvision/timm reference scripts, `bench run`
#   torch_compile     PyTorch with torch.compile on the model or the step
#   hf_trainer_sdpa   Hugging Face Trainer / Accelerate / PEFT with PyTorch SDPA attention (transformers' default)
#   hf_trainer_fa2    the same with FlashAttention-2 (attn_implementation="flash_attention_2")
#   lightning         PyTorch Lightning / Lightning Fabric training loops
#   llm_recipe        LLM recipe libraries on PyTorch: torchtune, LitGPT, llm-foundry, torchtitan
#   fused_kernels     fused-kernel fine-tuning libraries: Unsloth, Liger Kernel, fms-acceleration
#   deepspeed         the DeepSpeed engine (ZeRO, fused Adam) driving the loop
#   megatron          Megatron-LM / NeMo (tensor/pipeline parallel, fused kernels, TransformerEngine)
#   hand_fused        hand-written CUDA trainers (llm.c class)
#   vendor_container  vendor-optimized containers and recipes: NVIDIA NGC / Deep Learning Examples (DALI, Apex), AMD
#                     ROCm training containers
SoftwareStack = Literal["pytorch_eager", "torch_compile", "hf_trainer_sdpa", "hf_trainer_fa2", "lightning",
                        "llm_recipe", "fused_kernels", "deepspeed", "megatron", "hand_fused", "vendor_container"]
SOFTWARE_STACKS: tuple[SoftwareStack, ...] = (
    "pytorch_eager", "torch_compile", "hf_trainer_sdpa", "hf_trainer_fa2", "lightning", "llm_recipe",
    "fused_kernels", "deepspeed", "megatron", "hand_fused", "vendor_container")
# The three coarse classes result files and corpus excerpts carried before (bench/2 until issue 32): still read.
# vanilla_pytorch is pytorch_eager; the other two do not say which stack, so they read as no stack (None).
LEGACY_STACKS: dict[str, SoftwareStack | None] = {"vanilla_pytorch": "pytorch_eager", "optimized_pytorch": None,
                                                  "other_framework": None}
# Every value provenance.stack may hold (the stacks, then the legacy classes).
STACKS: tuple[str, ...] = (*SOFTWARE_STACKS, *LEGACY_STACKS)
# The stack a plan is made for when the scenario names none (training.stack absent or "auto"), by model family
# (MODEL_FAMILIES); the one owner of that default. Why each: docs/methods.md#software-stack. In short: the seed
# articles' users write their own eager loops (autocast + GradScaler, DataLoader, DDP) for vision and small models;
# the encoders and decoders they fine-tune are Hugging Face Hub checkpoints, trained with the Trainer / Accelerate /
# PEFT, where transformers picks PyTorch's SDPA attention by default (FlashAttention-2 is a separate install).
DEFAULT_STACKS: dict[str, SoftwareStack] = {
    "cnn": "pytorch_eager", "vit": "pytorch_eager", "encoder": "hf_trainer_sdpa", "decoder": "hf_trainer_sdpa",
    "rnn": "pytorch_eager", "mlp": "pytorch_eager", "custom": "pytorch_eager"}
# The arithmetic a published run really used ("AMP" or "mixed precision" as published is fp16 or bf16).
EffectivePrecision = Literal["fp32", "tf32", "fp16", "bf16", "unknown"]
EFFECTIVE_PRECISIONS: tuple[EffectivePrecision, ...] = (*PRECISIONS, "unknown")
# Which counter a memory figure is: torch.cuda.max_memory_allocated / max_memory_reserved, or the device's used
# memory (nvidia-smi / NVML: context, NCCL and fragmentation included).
MemoryMeaning = Literal["max_memory_allocated", "max_memory_reserved", "device_used"]
MEMORY_MEANINGS: tuple[MemoryMeaning, ...] = ("max_memory_allocated", "max_memory_reserved", "device_used")
# Units a throughput or time is published in (kept as published; the planner converts once, when it reads it).
# Memory figures as published (calibration/published rows): GiB = 2^30 bytes, GB = 10^9, MiB = 2^20, bytes as printed.
MEMORY_UNIT_BYTES: dict[str, float] = {"gib_memory": 2.0**30, "gb_memory": 1e9, "mib_memory": 2.0**20,
                                       "bytes_memory": 1.0}
PUBLISHED_UNITS: tuple[str, ...] = (
    "samples_per_s", "samples_per_s_per_gpu", "tokens_per_s", "tokens_per_s_per_gpu", "s_per_iteration",
    "ms_per_iteration", "iterations_per_s", "tflops_per_s_per_gpu", *MEMORY_UNIT_BYTES,
)
DataParallelism = Literal["none", "ddp", "fsdp", "zero1", "zero2", "zero3"]
DATA_PARALLELISMS: tuple[DataParallelism, ...] = ("none", "ddp", "fsdp", "zero1", "zero2", "zero3")
AttentionKind = Literal["eager", "sdpa", "flash", "unknown"]
ATTENTION_KINDS: tuple[AttentionKind, ...] = ("eager", "sdpa", "flash", "unknown")
# What a scenario may ask for (model.attention): eager = explicit softmax(QK^T)V, sdpa = PyTorch's
# scaled_dot_product_attention (flash or memory-efficient kernel), flash = FlashAttention-2 (16-bit, sm80+).
MODEL_ATTENTIONS: tuple[AttentionKind, ...] = ("eager", "sdpa", "flash")
BatchUnit = Literal["samples", "tokens"]
BATCH_UNITS: tuple[BatchUnit, ...] = ("samples", "tokens")

LOCALES: tuple[str, ...] = ("en", "es", "es-MX", "es-AR", "es-CO", "es-CL", "es-PE", "es-ES", "es-US", "es-UY",
                            "en-US", "en-GB")

# Units: binary sizes for memory (what torch and nvidia-smi report), decimal for bandwidth and FLOPs.
MIB = 2**20
GIB = 2**30
GB = 10**9
TFLOP = 10**12

# The app's one upload limit, in Streamlit's megabytes (MiB: Streamlit multiplies by 1024 * 1024), shown on every
# uploader in the reader's language. 16 covers every real upload with room to spare: the largest shipped result file
# is 44 KB, a full sweep (batches 1-1024 at 4 precisions, ~700 bytes a measurement) about 3 MB, and a synthetic
# 16 MiB file of 20,884 measurements loads and plans in 1.4 s (perf/large_result_file.py --mib 2 16); scenario files
# are capped at 1 MiB by their reader, whose message names the file. Each upload is held in the server's memory for
# its browser tab, so the limit bounds what one tab can pin there. The result reader's own 64 MiB cap is for files
# read from folders. The server's cap is 1 MB above it: Streamlit refuses a request whose Content-Length (the file
# plus its multipart framing) exceeds server.maxUploadSize, so an equal cap refused a file just under the limit.
UPLOAD_MAX_MB = 16
UPLOAD_SERVER_MAX_MB = UPLOAD_MAX_MB + 1  # .streamlit/config.toml and planner/launcher.py (tests/test_install.py)

# ---------------------------------------------------------------- reasons in result files
# Why a result file's figure is missing, a point was skipped, a row needs a word (schema trainplan.bench/2, additive:
# docs/schemas.md#bench-result): bench writes the key and its parameters (`reason_keys`, `unmeasured_keys`) and,
# beside them, the English sentence as a courtesy for people reading the file. This table is the one owner of the
# keys, of their parameters and of that courtesy sentence: bench cannot import planner.present (it runs without the
# app's packages), so the English template lives here, and planner/present/locales/en/bench.yaml bench_reason.<key>
# must say exactly the same (tests/test_reason_keys.py; es must use the same parameters). Never reuse a key for
# another meaning: files already written carry it. {error} parameters hold an exception's own words (not translated).
BENCH_REASONS: dict[str, str] = {
    # bench/trace.py
    "no_gpu_kernels": "traced on CPU fake tensors: no GPU kernels run",
    "no_gpu_kernels_time": "traced on CPU fake tensors: no GPU kernels run, so there is no time to measure",
    "allocator_not_emulated": "the caching allocator's segments and fragmentation are not emulated",
    "steady_state": "traced in steady state (optimizer state allocated before the step)",
    "outside_trace": "CUDA context and NCCL buffers are outside a tensor trace",
    "fake_values": "fake tensors carry no values",
    "trace_failed": "trace failed: {error}",
    # bench/harness.py
    "cpu_memory": "CPU: torch keeps allocator peak statistics for CUDA only",
    "no_phase_pass": "no phase pass (--phase-steps 0)",
    "no_phase_pass_memory": "no phase pass (--phase-steps 0) to measure it",
    "no_flops": "the model's FLOPs per sample are unknown",
    "no_peak": "no peak TFLOPS for this precision",
    "not_measured": "not measured",
    "no_grad_scaler": "no GradScaler at this precision (only fp16 uses one)",
    "step_failed": "{error}",
    # bench/sweep.py, bench/cli_run.py
    "no_gpu_nvml": "no GPU: NVML telemetry applies to GPUs only",
    "no_profile_cpu": "no GPU profile on CPU (MFU is relative to a GPU's dense peak)",
    "no_profile_gpu": "the GPU matches no profile, so there is no peak to compare with",
    "no_precision_peak": "profile {profile} lists no {precision} peak (unsupported there)",
    "in_progress": "not measured yet: the run was still going when this file was last written (if it has ended, it "
                   "stopped before this point: killed, out of host memory, or crashed)",
    "interrupted": "interrupted (Ctrl-C or SIGTERM) before this point was measured",
    "run_failed": "the run failed before this point ({error})",
    "batch_not_chosen": "batch sizes not chosen yet (--batch auto searches the safe maximum first)",
    "cpu_no_memory_limit": "CPU: no device-memory limit to search (host memory is swapped, not exhausted)",
    "nvml_no_handle": "NVML handle for GPU {gpu}: {error}",
    # bench/maxbatch.py
    "search_stopped": "stopped after {trials} trials: {ran} ran, {failed} failed",
    "search_stopped_none_failed": "stopped after {trials} trials: {ran} ran, no size failed",
    "no_batch_fits": "no batch size fits",
    "no_size_within_budget": "no size ran within the trial budget",
    "search_limit": "reached the search limit of {limit}",
    "repeat_run_failed": "batch {batches} failed its repeat run (oom)",
    "no_size_passed_repeat": "no size passed its repeat run: {tried}",
    # bench/precision.py
    "cpu_fp16_not_float16": "CPU autocast in torch {torch} does not run matmuls in float16",
    "cpu_fp16_unsupported": "fp16 autocast/GradScaler on CPU unsupported in torch {torch}: {error}",
    "tf32_on_cpu": "tf32 is a CUDA tensor-core mode; on CPU this is the fp32 (ieee) measurement",
    # bench/telemetry.py
    "nvml_not_importable": "pynvml not importable ({error}); install nvidia-ml-py",
    "nvml_unavailable": "NVML unavailable: {error}",
    "nvml_util_failed": "NVML utilisation: {error}",
    "nvml_util_no_samples": "NVML utilisation: no samples",
    "nvml_power_failed": "NVML power: {error}",
    "nvml_power_no_samples": "NVML power: no samples",
    "nvml_memory_failed": "NVML memory: {error}",
    "nvml_memory_no_samples": "NVML memory: no samples",
    "energy_from_power": "energy = mean sampled power x window time (total-energy counter unavailable: {error})",
    "energy_from_power_pre_volta": "energy = mean sampled power x window time (total-energy counter unavailable: "
                                   "pre-Volta GPU)",
    "no_energy": "no NVML energy counter and no power samples",
    # bench/dataloader_bench.py
    "pin_memory_cpu": "pin_memory only matters for copies to a CUDA device",
    # bench/detect.py (environment.unmeasured)
    "torch_threads_failed": "torch.get_num_threads() failed ({error})",
    "cpu_count_unknown": "os.cpu_count() cannot tell on this system",
    "cudnn_failed": "torch.backends.cudnn.version() failed ({error})",
    "no_cudnn": "torch.backends.cudnn.version() is None: this torch build has no cuDNN",
    "no_cudnn_cpu_build": "torch.backends.cudnn.version() is None: this torch build has no cuDNN (a CPU build)",
    # bench/ddp_worker.py, bench/ddp.py
    "ddp_no_memory": "bench ddp: not measured (bench run measures memory)",
    "ddp_no_nvml": "bench ddp: no NVML sampling",
    "ddp_no_throughput": "bench ddp measures scaling; bench run measures per-GPU throughput",
    "ddp_no_scaler": "bench ddp does not track loss-scale skips",
    "ddp_step": "bench ddp: DDP step on {processes} processes ({nodes} node(s) x {per_node}, {backend}), per step the "
                "slowest rank, median over {steps} steps; samples_per_s is per process",
    "ddp_one_rank": "one rank: an all-reduce moves nothing across a link (2(n-1)/n = 0)",
    "ddp_mixed_devices": "mixed devices {devices}: gpu_profile_id left null, no plan uses this run",
    # bench/stats.py (warnings[]): a noisy measurement
    "noisy_steps": "{precision} batch {batch}: noisy step times: IQR/median {iqr_pct}% > {limit_pct}% over {n} steps "
                   "(another process on the device, clock or thermal changes, or too few steps); the median is kept, "
                   "re-measure on an idle machine with more --steps to trust it",
    "noisy_ddp_steps": "DDP step on {processes} processes, batch {batch}: noisy step times: IQR/median {iqr_pct}% > "
                       "{limit_pct}% over {n} steps (another process on the device, clock or thermal changes, or too "
                       "few steps); the median is kept, re-measure on an idle machine with more --steps to trust it",
    # planner/inputs/actuals.py (a recorded run's measured point)
    "recorded_by_hand": "not measured: a run recorded by hand on {date} gives only its step time",
    "recorded_run": "Recorded by hand on {date} (a finished run's step time, typed in): one figure, no spread, no "
                    "memory.",
    "recorded_run_file": "Recorded by hand on {date} (a finished run's step time, typed in; {file}): one figure, no "
                         "spread, no memory.",
}
ReasonParam = str | int | float


def reason_params(key: str) -> tuple[str, ...]:
    """The parameter names of a reason key, in the order its sentence names them; KeyError for an unknown key."""
    import string

    return tuple(dict.fromkeys(name for _, name, _, _ in string.Formatter().parse(BENCH_REASONS[key]) if name))


class Reason:
    """One reason a result file gives: a key of BENCH_REASONS and its parameters (exactly the key's names).
    str() is the English courtesy sentence bench writes beside it."""

    __slots__ = ("key", "params")

    def __init__(self, key: str, **params: ReasonParam):
        if key not in BENCH_REASONS:
            raise ValueError(f"unknown reason key {key!r} (planner.vocab.BENCH_REASONS)")
        if set(params) != set(reason_params(key)):
            raise ValueError(f"reason {key!r} takes {sorted(reason_params(key))}, got {sorted(params)}")
        self.key = key
        self.params: dict[str, ReasonParam] = params

    def __str__(self) -> str:
        return BENCH_REASONS[self.key].format(**self.params)

    def __repr__(self) -> str:
        return f"Reason({self.key!r}, **{self.params!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reason) and (self.key, self.params) == (other.key, other.params)

    def __hash__(self) -> int:
        return hash((self.key, tuple(sorted(self.params.items()))))

    def as_json(self) -> dict[str, object]:
        return {"key": self.key, "params": dict(self.params)}
