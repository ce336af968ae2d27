"""`trainplan app` passes an allow-list of Streamlit flags through (issue 34: `--server.port N` was refused, only
`--port` worked): each is checked first, an address other than 127.0.0.1 is served with a warning, and any other
flag is refused with one message that lists the allowed ones. Streamlit itself never starts here."""

from __future__ import annotations

import pytest

from planner import launcher


@pytest.fixture
def started(monkeypatch):
    """What `trainplan app` would run: the module and its argv (no server, no browser thread)."""
    calls: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(launcher, "_run_module", lambda module, args: calls.append((module, args)) or 0)
    monkeypatch.setattr(launcher.threading, "Thread", _NoThread)
    return calls


class _NoThread:
    def __init__(self, *args, **kwargs):
        pass

    def start(self):
        pass


def _flags(argv: list[str]) -> dict[str, str]:
    return dict(a[2:].split("=", 1) for a in argv[2:])


@pytest.mark.parametrize("argv", [["--server.port", "8600"], ["--server.port=8600"], ["--port", "8600"],
                                  ["--port", "8600", "--server.port", "8600"]])
def test_server_port_is_passed_like_port(started, capsys, argv):
    assert launcher.app([*argv, "--no-browser"]) == 0
    [(module, args)] = started
    assert module == "streamlit" and args[:2] == ["run", str(launcher.APP_FILE)]
    flags = _flags(args)
    assert flags["server.port"] == "8600" and flags["server.address"] == "127.0.0.1"
    assert capsys.readouterr().err == ""  # the default address: no warning


def test_another_address_is_served_with_a_warning(started, capsys):
    assert launcher.app(["--server.address", "0.0.0.0", "--no-browser", "--theme.base", "dark"]) == 0
    flags = _flags(started[0][1])
    assert flags["server.address"] == "0.0.0.0" and flags["theme.base"] == "dark"
    assert flags["server.maxUploadSize"] == launcher.STREAMLIT_OPTIONS["server.maxUploadSize"]  # not the user's
    err = capsys.readouterr().err
    assert "warning" in err and "0.0.0.0" in err and "no login" in err


@pytest.mark.parametrize("argv, words", [
    (["--server.maxUploadSize", "200"], ["--server.maxUploadSize", "not passed", "--server.port", "--server.address"]),
    (["--server.fileWatcherType=auto"], ["--server.fileWatcherType", "allowed", "--theme.base"]),
    (["--frobnicate"], ["--frobnicate", "allowed", "--server.port"]),
    (["stray"], ["stray", "allowed"]),
    (["--server.port", "0"], ["--server.port 0", "1-65535"]),
    (["--server.port", "http"], ["--server.port http", "1-65535"]),
    (["--server.port"], ["--server.port", "needs a value"]),
    (["--server.port", "--no-browser"], ["--server.port", "needs a value"]),
    (["--port", "8600", "--server.port", "8700"], ["--port 8600", "--server.port 8700", "one port"]),
    (["--port", "70000"], ["--port 70000", "1-65535"]),
    (["--server.port", "1", "--server.port", "2"], ["given twice"]),
    (["--server.address", ""], ["--server.address", "host"]),
    (["--server.baseUrlPath", "a b"], ["--server.baseUrlPath", "URL path"]),
    (["--theme.base", "blue"], ["--theme.base blue", "light, dark"]),
])
def test_other_flags_and_bad_values_are_refused_naming_the_allowed_ones(started, capsys, argv, words):
    with pytest.raises(SystemExit) as exited:
        launcher.app([*argv, "--no-browser"])
    assert exited.value.code == 2 and not started  # nothing started
    err = capsys.readouterr().err
    assert "Traceback" not in err and "trainplan app: error:" in err
    for word in words:
        assert word in err, (word, err)


def test_the_browser_opens_the_local_url_of_an_all_interfaces_server(monkeypatch, capsys):
    opened: list[tuple] = []

    class Thread(_NoThread):
        def __init__(self, target, args, daemon):
            opened.append(args)

    monkeypatch.setattr(launcher, "_run_module", lambda module, args: 0)
    monkeypatch.setattr(launcher.threading, "Thread", Thread)
    assert launcher.app(["--server.address=0.0.0.0", "--server.port=8600", "--server.baseUrlPath=/tp/"]) == 0
    assert opened == [("http://127.0.0.1:8600/tp/", "127.0.0.1", 8600)]


def test_the_launcher_lists_the_passed_flags():
    for flag in launcher.PASSED_FLAGS:
        assert f"--{flag}" in launcher.COMMANDS["app"]
