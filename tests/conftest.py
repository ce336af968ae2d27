"""Test-wide isolation: user data ($TRAINPLAN_HOME) goes to a fresh folder, never the machine's ~/.trainplan."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def _isolated_trainplan_home(tmp_path_factory):
    # A price override or saved scenario left on a developer's machine must not change what a test plans.
    # Tests that need their own home still set TRAINPLAN_HOME themselves (monkeypatch wins inside the test).
    previous = os.environ.get("TRAINPLAN_HOME")
    os.environ["TRAINPLAN_HOME"] = str(tmp_path_factory.mktemp("trainplan-home"))
    yield
    if previous is None:
        os.environ.pop("TRAINPLAN_HOME", None)
    else:
        os.environ["TRAINPLAN_HOME"] = previous


@pytest.fixture(scope="session")
def aliases():
    """The shipped catalog alias table, checked against the shipped profiles (price import and refresh tests)."""
    from planner.inputs import price_catalog as pc
    from planner.inputs.profiles import DEFAULT_PROFILES_DIR, load_profiles

    profiles, problems = load_profiles(DEFAULT_PROFILES_DIR)
    assert problems == []
    return pc.load_aliases(pc.ALIASES_PATH, known_profiles=profiles)


# ---------------------------------------------------------------- real-browser tests (tests/browser_support.py)

@pytest.fixture(scope="module")
def browser():
    """One Debian chromium per browser-test module."""
    from tests.browser_support import chromium

    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def fresh_app_url(tmp_path_factory):
    """The app served for a new user: an empty $TRAINPLAN_HOME, no bench interpreter configured."""
    from tests.browser_support import streamlit_server, with_env

    with streamlit_server(with_env(TRAINPLAN_HOME=str(tmp_path_factory.mktemp("home")),
                                   TRAINPLAN_BENCH_PYTHON=None)) as url:
        yield url
