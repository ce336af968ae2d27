"""ui/app_main.py tunes the server's garbage collector once per process, after the first run (issue 19: a widget
change; perf/app_speed.py measures it): the first run's survivors frozen, young collections every 20,000
allocations; a rerun neither freezes again nor changes the thresholds."""

from __future__ import annotations

import gc
from pathlib import Path

from streamlit.testing.v1 import AppTest

from ui import app_main

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def test_the_first_run_tunes_the_collector_once():
    before = gc.get_threshold()
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    try:
        at = AppTest.from_file(APP, default_timeout=60)
        at.run()
        assert not at.exception
        assert gc.get_threshold() == app_main.GC_THRESHOLDS
        frozen = gc.get_freeze_count()
        assert frozen > 10_000  # the imports, catalogs and result files
        at.number_input(key="epochs").set_value(50).run()
        assert gc.get_freeze_count() <= frozen  # a rerun freezes none of its objects (frozen ones may die)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
