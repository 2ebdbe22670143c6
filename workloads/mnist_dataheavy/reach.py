"""Reaching the tf.data service dispatcher (checked before anything heavy is built)."""

from __future__ import annotations

import socket
import time


class DataServiceError(RuntimeError):
    """The tf.data service cannot feed the run (dispatcher unreachable, no workers, timeout)."""


def check_reachable(address: str, timeout_s: float) -> None:
    """Open and close a TCP connection to ``address`` (HOST:PORT), retrying until ``timeout_s``.

    Raises:
        DataServiceError: not HOST:PORT, or nothing accepts connections there in time;
            the message says how to start a dispatcher and a worker.
    """
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise DataServiceError(f"data_service {address!r} is not HOST:PORT")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=min(5.0, timeout_s)):
                return
        except OSError as exc:
            if time.monotonic() >= deadline:
                raise DataServiceError(
                    f"no tf.data service dispatcher answers at {address} ({exc}); start one with "
                    f"`trainbench data-service dispatcher --port {port}` and at least one "
                    f"`trainbench data-service worker --dispatcher {address}`"
                ) from exc
            time.sleep(0.5)
