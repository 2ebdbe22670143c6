"""Horovod over Gloo inside a Slurm job, without ssh: the node side of the sbatch script.

horovodrun reaches other hosts over ssh, which compute nodes usually refuse and the
demo cluster does not run. Horovod's Gloo controller needs only two things
horovodrun would otherwise provide (``horovod/runner/gloo_run.py``): its HTTP
rendezvous server, initialised with the slot plan of every host, and, in each rank,
the HOROVOD_* variables of its slot. Slurm starts the processes instead of ssh:

- ``python -m suite.slurm.horovod_gloo serve --port P --hosts n1:K,n2:K`` runs Horovod's
  ``RendezvousHTTPServer`` on the first node (a one-task ``srun`` step);
- ``python -m suite.slurm.horovod_gloo slot --rendezvous HEAD:P --hosts n1:K,n2:K -- CMD``
  is each task of the ranks' ``srun`` step: it finds its slot in the same plan
  (Horovod's ``get_host_assignments``) from SLURMD_NODENAME and SLURM_LOCALID, sets the
  variables horovodrun would set (rank, size, local and cross ranks, the rendezvous
  address, the network interface that reaches it) and execs CMD.

Both ends compute the plan from the same ``--hosts`` string, so they agree on every slot.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sys
import time
from typing import Any

CONNECT_TIMEOUT_S = 120.0
"""Seconds a slot waits for the rendezvous server to listen (it starts as a parallel step)."""


def host_plan(hosts: str) -> list[Any]:
    """Horovod's slot plan (``SlotInfo`` list) for ``host:slots,...``, one slot per rank."""
    from horovod.runner.common.util.hosts import get_host_assignments, parse_hosts

    parsed = parse_hosts(hosts)
    return list(get_host_assignments(parsed, sum(h.slots for h in parsed)))


def interface_towards(address: str) -> str | None:
    """The name of the network interface this host uses to reach ``address`` (None if not found)."""
    import psutil

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((address, 9))  # UDP: no packet is sent, the kernel only picks the route
        local = s.getsockname()[0]
    for name, addrs in psutil.net_if_addrs().items():
        if any(a.family == socket.AF_INET and a.address == local for a in addrs):
            return name
    return None


def slot_env(plan: list[Any], node: str, local_rank: int, address: str, port: int) -> dict[str, str]:
    """The HOROVOD_* variables of the slot ``(node, local_rank)`` (as horovodrun's Gloo launcher sets them).

    Raises:
        ValueError: the plan has no such slot (the node or the local rank is not in ``--hosts``).
    """
    slot = next((s for s in plan if s.hostname == node and s.local_rank == local_rank), None)
    if slot is None:
        hosts = sorted({s.hostname for s in plan})
        raise ValueError(f"no Horovod slot for node {node!r}, local rank {local_rank} in the plan of hosts {hosts}")
    env = {
        "HOROVOD_HOSTNAME": str(slot.hostname),
        "HOROVOD_RANK": str(slot.rank),
        "HOROVOD_SIZE": str(slot.size),
        "HOROVOD_LOCAL_RANK": str(slot.local_rank),
        "HOROVOD_LOCAL_SIZE": str(slot.local_size),
        "HOROVOD_CROSS_RANK": str(slot.cross_rank),
        "HOROVOD_CROSS_SIZE": str(slot.cross_size),
        "HOROVOD_GLOO_RENDEZVOUS_ADDR": address,
        "HOROVOD_GLOO_RENDEZVOUS_PORT": str(port),
        "HOROVOD_CONTROLLER": "gloo",
        "HOROVOD_CPU_OPERATIONS": "gloo",
        "PYTHONUNBUFFERED": "1",
    }
    iface = interface_towards(address)
    if iface is not None:
        env["HOROVOD_GLOO_IFACE"] = iface
        env["NCCL_SOCKET_IFNAME"] = iface
    return env


def wait_for(address: str, port: int, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Block until ``address:port`` accepts a TCP connection.

    Raises:
        TimeoutError: nothing listened within ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((address, port), timeout=2):
                return
        except OSError as exc:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"Horovod's rendezvous server at {address}:{port} did not answer within {timeout_s:.0f} s: {exc}"
                ) from exc
            time.sleep(0.2)


def serve(port: int, hosts: str) -> int:
    """Run Horovod's rendezvous server on ``port`` for the plan of ``hosts`` until terminated."""
    from horovod.runner.http.http_server import RendezvousHandler, RendezvousHTTPServer

    server = RendezvousHTTPServer(("", port), RendezvousHandler, 0)
    server.init(host_plan(hosts))
    print(f"trainbench: Horovod rendezvous on {socket.gethostname()}:{port} for {hosts}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


def main(argv: list[str] | None = None) -> int:
    """``serve`` or ``slot``; see the module docstring. Exit 2 on bad arguments or a missing slot."""
    ap = argparse.ArgumentParser(prog="python -m suite.slurm.horovod_gloo")
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("serve", help="run Horovod's Gloo rendezvous server")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--hosts", required=True, help="host:slots,... (every rank's slot)")
    t = sub.add_parser("slot", help="set this task's HOROVOD_* slot and exec the command")
    t.add_argument("--rendezvous", required=True, help="HOST:PORT of the rendezvous server")
    t.add_argument("--hosts", required=True)
    t.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args(argv)
    if args.what == "serve":
        return serve(args.port, args.hosts)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    host, _, port_text = args.rendezvous.rpartition(":")
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
    if not command or not host or not port_text.isdigit() or "SLURM_LOCALID" not in os.environ:
        print("slot: needs --rendezvous HOST:PORT, a command after --, and SLURM_LOCALID (run it under srun)")
        return 2
    try:
        address = socket.gethostbyname(host)
        env = slot_env(host_plan(args.hosts), node, int(os.environ["SLURM_LOCALID"]), address, int(port_text))
        wait_for(address, int(port_text))
    except (OSError, ValueError) as exc:
        print(f"trainbench: Horovod slot on {node}: {exc}", file=sys.stderr)
        return 2
    os.execvpe(command[0], command, {**os.environ, **env})


if __name__ == "__main__":
    sys.exit(main())
