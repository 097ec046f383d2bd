"""The command line: --version, and a taken port said in one line before anything starts."""

from __future__ import annotations

import socket
from importlib import metadata

import pytest

from similar_sessions.cli import main


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert (
        capsys.readouterr().out.strip()
        == f"similar-sessions {metadata.version('similar-sessions')}"
    )


def test_serve_on_a_taken_port_says_so_in_one_line_and_exits_non_zero(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status = main(["serve", "--host", "127.0.0.1", "--port", str(port)])
    err = capsys.readouterr().err
    assert status != 0
    assert err.splitlines() == [
        f"similar-sessions serve: port {port} on 127.0.0.1 is taken (something else listens "
        "there); choose another with --port"
    ]
    assert "serving on" not in err


def test_serve_refuses_fewer_than_one_worker(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--workers", "0"])
    assert exited.value.code == 2
    assert "--workers: must be 1 or more" in capsys.readouterr().err
