"""The one page cache: inputs and plans every page shares (Plan, Compare, Benchmarks, GPUs, Report), the current
scenario, and GPU detection."""

from __future__ import annotations

import dataclasses
import datetime as dt

import streamlit as st

from planner.engine.estimates import Plan
from planner.inputs.errors import InputError
from planner.inputs.scenario import Scenario, load_scenario_file, parse_scenario
from planner.inputs.userdata import (
    DEFAULT_SCENARIO,
    SHIPPED_PROFILES_DIR,
    SHIPPED_RESULTS_DIR,
    home,
    price_overrides_path,
    user_profiles_dir,
    user_results_dir,
)
from ui import bench_runner, scenario_files, state, url_codec

DETECT_KEY = "_detect"


def inputs_fingerprint() -> str:
    """Changes when a profile, result file or price override is added or edited (shipped or user folders)."""
    override = price_overrides_path()
    return scenario_files.folders_fingerprint([SHIPPED_PROFILES_DIR, SHIPPED_RESULTS_DIR, user_profiles_dir(),
                                      user_results_dir()]) + (
        f"-{override.stat().st_mtime_ns}" if override.exists() else f"-{override}")


@st.cache_resource(show_spinner=False, max_entries=4)
def _inputs(fingerprint: str):
    from planner.inputs.folders import load_inputs

    return load_inputs()


def inputs():
    """Profiles, result files and price overrides as the Plan page sees them (reloaded when a file changes)."""
    return _inputs(inputs_fingerprint())


# Result files (ResultFile.content_id) whose set-aside points this session uses anyway (the Benchmarks page): data
# every plan of the session reads (Inputs.trusted_results), never a setting of the engine.
TRUSTED_KEY = "_trusted_results"


def trusted() -> tuple[str, ...]:
    return tuple(sorted(st.session_state.get(TRUSTED_KEY, ())))


@st.cache_resource(show_spinner=False, max_entries=16)
def _inputs_trusting(fingerprint: str, trusted_ids: tuple[str, ...]):
    inputs = _inputs(fingerprint)
    return dataclasses.replace(inputs, trusted_results=frozenset(trusted_ids)) if trusted_ids else inputs


@st.cache_resource(show_spinner=False, max_entries=64)
def _plan(scenario_key: str, fingerprint: str, today_iso: str, source: str, trusted_ids: tuple[str, ...],
          _scenario: Scenario) -> Plan:
    """One plan per (scenario, input folders, files trusted, day); Plan is immutable, so sessions and pages share
    it."""
    from planner.engine.plan import build_plan

    return build_plan(_scenario, _inputs_trusting(fingerprint, trusted_ids), today=dt.date.fromisoformat(today_iso),
                      source=source)


def plan_for(scenario: Scenario, source: str = "sidebar") -> Plan:
    """The plan of a scenario with the current inputs; InputError (naming `source`) for one they cannot plan."""
    # The key is the scenario's repr (every field of its frozen dataclasses): the same as its YAML for telling
    # scenarios apart, in a twentieth of the time.
    return _plan(repr(scenario), inputs_fingerprint(), dt.date.today().isoformat(), source, trusted(), scenario)


def current_scenario(known_gpu_ids) -> tuple[Scenario, str]:
    """The scenario the Plan page holds (session, then the link), else the shipped default; and where it came from."""
    base = st.session_state.get(state.BASE_KEY)
    if base:
        try:
            return parse_scenario(base, "current scenario", known_gpu_ids), "session"
        except InputError:
            pass
    raw = st.query_params.get(url_codec.URL_PARAM)
    if raw:
        try:
            return url_codec.decode_scenario(raw, known_gpu_ids), "link"
        except InputError:
            pass
    return load_scenario_file(DEFAULT_SCENARIO, known_gpu_ids), "default"


@st.cache_resource(show_spinner=False, ttl=600, max_entries=8)
def _detect(python: str, home_dir: str) -> bench_runner.Detection:
    return bench_runner.detect(python)


def detection(refresh: bool = False) -> bench_runner.Detection:
    """`bench detect` for this machine, run once per 10 minutes per interpreter (it imports torch: seconds)."""
    python = bench_runner.bench_python()
    if refresh:
        _detect.clear()
    found = _detect(python, str(home()))
    st.session_state[DETECT_KEY] = found
    return found
