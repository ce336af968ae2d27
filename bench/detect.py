"""`python -m bench detect`: GPUs seen by NVML and torch, driver, CUDA, the matched profile; the result-file
environment block."""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
from pathlib import Path

from bench.telemetry import device_handle, load_nvml, static_info
from planner.inputs.reasons import unmeasured_fields
from planner.inputs.shipped import PROFILES_DIR as SHIPPED_PROFILES_DIR
from planner.vocab import Reason

ADD_PROFILE_HINT = (
    "add a profile: gpu_profiles/<id>.yaml with nvml_names: [\"{name}\"] (README, section \"Adding a GPU\"), "
    "then re-run; this run is labelled {label}"
)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def profile_dirs(extra: list[str] | None = None) -> list[Path]:
    """The shipped gpu_profiles/ plus $TRAINPLAN_HOME/gpu_profiles, or the folders given with --profiles."""
    if extra:
        return [Path(d) for d in extra]
    home = Path(os.environ.get("TRAINPLAN_HOME") or Path.home() / ".trainplan")
    return [SHIPPED_PROFILES_DIR, home / "gpu_profiles"]


def load_gpu_profiles(dirs: list[Path]) -> tuple[dict, list[str]]:
    """(profiles by id, problems); never raises: no profiles just means every GPU is 'unknown'.

    A bad profile file is one problem line (load_profiles skips it, whatever went wrong); anything else that
    fails here is one line too, never a traceback: detection must still report the GPUs.
    """
    try:
        from planner.inputs.profiles import load_profiles

        return load_profiles(*dirs)
    except ImportError as exc:  # pyyaml missing on a bare GPU box
        return {}, [f"cannot load GPU profiles ({exc}); install pyyaml"]
    except Exception as exc:  # noqa: BLE001 - e.g. a profile folder that cannot be listed
        return {}, [f"cannot load GPU profiles from {', '.join(map(str, dirs))} ({exc.__class__.__name__}: {exc})"]


def match_profile(name: str | None, profiles: dict):
    if not name or not profiles:
        return None
    from planner.inputs.profiles import match_nvml_name

    return match_nvml_name(name, profiles)


def _torch_facts(torch_mod) -> dict:
    facts = {"torch": torch_mod.__version__, "cuda": getattr(torch_mod.version, "cuda", None), "gpus": []}
    try:
        available = bool(torch_mod.cuda.is_available())
    except Exception as exc:  # noqa: BLE001 - a broken driver install raises here
        available, facts["cuda_reason"] = False, f"torch.cuda.is_available() failed: {exc}"
    facts["cuda_available"] = available
    if not available:
        facts.setdefault("cuda_reason", "torch.cuda.is_available() is False"
                         + ("" if facts["cuda"] else " (this torch build has no CUDA)"))
        return facts
    for i in range(torch_mod.cuda.device_count()):
        props = torch_mod.cuda.get_device_properties(i)
        uuid = getattr(props, "uuid", None)
        facts["gpus"].append({
            "index": i, "name": props.name, "total_memory_bytes": int(props.total_memory),
            "capability": f"{props.major}.{props.minor}", "uuid": str(uuid) if uuid is not None else None,
            "multiprocessors": getattr(props, "multi_processor_count", None),
        })
    return facts


def _call(fn) -> tuple[object, str | None]:
    """(value, None), or (None, why) when the call fails."""
    try:
        return fn(), None
    except Exception as exc:  # noqa: BLE001 - a broken library install must not stop detection
        return None, f"{exc.__class__.__name__}: {exc}"


def software(torch_mod) -> dict:
    """The result file's software facts (schema /2): trainplan version, CPU threads, cuDNN; nulls with reasons."""
    from planner.vocab import VERSION as __version__

    unmeasured: dict[str, Reason] = {}
    torch_threads, why = _call(lambda: int(torch_mod.get_num_threads()))
    if torch_threads is None:
        unmeasured["cpu_threads.torch_num_threads"] = Reason("torch_threads_failed", error=str(why))
    cpu_count = os.cpu_count()
    if cpu_count is None:
        unmeasured["cpu_threads.os_cpu_count"] = Reason("cpu_count_unknown")
    cudnn, why = _call(lambda: torch_mod.backends.cudnn.version())
    if cudnn is None:
        unmeasured["cudnn"] = (Reason("cudnn_failed", error=str(why)) if why else
                               Reason("no_cudnn" if getattr(torch_mod.version, "cuda", None) else "no_cudnn_cpu_build"))
    return {"trainplan_version": __version__,
            "cpu_threads": {"torch_num_threads": torch_threads, "os_cpu_count": cpu_count},
            "cudnn": cudnn, **unmeasured_fields(unmeasured)}


def gather(nvml=None, torch_mod=None, profiles_dirs: list[str] | None = None, cpu_only: bool = False) -> dict:
    """Everything `detect` reports. `nvml` and `torch_mod` are injectable for tests."""
    if torch_mod is None:
        import torch as torch_mod
    facts = {
        "hostname": socket.gethostname(), "python": platform.python_version(), "cpu": cpu_name(),
        "cpu_count": os.cpu_count(), **_torch_facts(torch_mod), "software": software(torch_mod),
    }
    nvml_mod, nvml_reason = load_nvml(nvml)
    facts["nvml_available"] = nvml_mod is not None
    facts["nvml_reason"] = str(nvml_reason) if nvml_reason else None
    facts["nvml_gpus"] = []
    facts["driver"] = None
    if nvml_mod is not None:
        try:
            count = nvml_mod.nvmlDeviceGetCount()
        except Exception:  # noqa: BLE001
            count = 0
        for i in range(count):
            info = static_info(nvml_mod, nvml_mod.nvmlDeviceGetHandleByIndex(i))
            facts["nvml_gpus"].append({"index": i, **info})
            facts["driver"] = facts["driver"] or info.get("driver")
    profiles, problems = load_gpu_profiles(profile_dirs(profiles_dirs))
    facts["profile_problems"] = problems
    for gpu in facts["nvml_gpus"]:
        profile = match_profile(gpu.get("name"), profiles)
        gpu["profile_id"] = profile.id if profile else None
    for gpu in facts["gpus"]:
        nvml_info = _nvml_for(nvml_mod, gpu) if nvml_mod is not None else None
        gpu["nvml"] = nvml_info
        name = (nvml_info or {}).get("name") or gpu["name"]
        profile = match_profile(name, profiles)
        gpu["profile_id"] = profile.id if profile else None
        gpu["device_dir"] = profile.id if profile else f"unknown-{_slug(name)}"
    facts["device"] = "cuda" if facts["cuda_available"] and facts["gpus"] and not cpu_only else "cpu"
    facts["_profiles"] = profiles
    return facts


def _nvml_for(nvml_mod, gpu: dict) -> dict | None:
    try:
        return static_info(nvml_mod, device_handle(nvml_mod, gpu.get("uuid"), gpu["index"]))
    except Exception:  # noqa: BLE001
        return None


def _slug(text: str) -> str:
    from planner.inputs.filenames import slug

    return slug(text)


def cpu_reason(facts: dict) -> str:
    parts = [facts.get("cuda_reason") or "no CUDA device"]
    if not facts.get("nvml_available"):
        parts.append(facts.get("nvml_reason") or "NVML unavailable")
    return "; ".join(parts)


def environment_block(facts: dict, fp32_flags: dict, cudnn_benchmark: bool, gpu_index: int = 0) -> dict:
    """The result file's `environment` (DESIGN.md, schema /2): every key present, None where it does not apply
    (software facts that could not be read are null with a reason in `unmeasured`)."""
    on_gpu = facts["device"] == "cuda"
    gpu = facts["gpus"][gpu_index] if on_gpu else {}
    nvml_info = gpu.get("nvml") or {}
    return {
        "device": facts["device"],
        "hostname": facts["hostname"],
        "gpu_name": (nvml_info.get("name") or gpu.get("name")) if on_gpu else None,
        "gpu_profile_id": gpu.get("profile_id") if on_gpu else None,
        "gpu_count": len(facts["gpus"]) if on_gpu else 0,
        "total_memory_bytes": gpu.get("total_memory_bytes") if on_gpu else None,
        "driver": facts.get("driver"),
        "cuda": facts.get("cuda"),
        "torch": facts.get("torch"),
        "python": facts.get("python"),
        "cpu": facts.get("cpu"),
        "nvml_available": facts.get("nvml_available", False),
        "fp32_precision": fp32_flags,
        "cudnn_benchmark": cudnn_benchmark,
        "allocator_config": os.environ.get("PYTORCH_CUDA_ALLOC_CONF") or os.environ.get("PYTORCH_ALLOC_CONF"),
        "power_limit_w": nvml_info.get("power_limit_w"),
        "clocks": nvml_info.get("clocks"),
        "mig": nvml_info.get("mig"),
        **facts["software"],
    }


def public(facts: dict) -> dict:
    return {k: v for k, v in facts.items() if not k.startswith("_")}


def render_text(facts: dict) -> str:
    soft = facts["software"]
    lines = [f"torch {facts['torch']} (CUDA build: {facts['cuda'] or 'none'}, cuDNN {soft['cudnn'] or 'none'}), "
             f"Python {facts['python']}, host {facts['hostname']}, CPU {facts['cpu']} x{facts['cpu_count']} "
             f"({soft['cpu_threads']['torch_num_threads']} torch threads), trainplan {soft['trainplan_version']}"]
    if facts["nvml_available"]:
        lines.append(f"NVML: driver {facts['driver']}, {len(facts['nvml_gpus'])} GPU(s)")
    else:
        lines.append(f"NVML: not available ({facts['nvml_reason']})")
    if not facts["cuda_available"]:
        lines.append(f"CUDA: not available ({facts.get('cuda_reason')}); `bench run` measures on the CPU "
                     "(results/cpu/)")
    for gpu in facts["gpus"]:
        match = gpu["profile_id"] or "no profile matches"
        lines.append(f"GPU {gpu['index']}: {gpu['name']}, {gpu['total_memory_bytes'] / 2**30:.1f} GiB, "
                     f"compute {gpu['capability']} -> profile: {match}")
        if not gpu["profile_id"]:
            lines.append("  " + ADD_PROFILE_HINT.format(name=(gpu.get("nvml") or {}).get("name") or gpu["name"],
                                                       label=gpu["device_dir"]))
    for problem in facts["profile_problems"]:
        lines.append(f"profile problem: {problem}")
    return "\n".join(lines)


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output (the app uses this)")
    parser.add_argument("--profiles", action="append", metavar="DIR",
                        help="GPU profile folder(s) (default: gpu_profiles/ and $TRAINPLAN_HOME/gpu_profiles)")


def main(args) -> int:
    facts = gather(profiles_dirs=args.profiles)
    events = getattr(args, "events", None)
    if events is not None:  # the app's stream (planner/inputs/bench_events.py)
        events.emit("done", facts=public(facts))
    elif args.json:
        json.dump(public(facts), sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        print(render_text(facts))
    return 0
