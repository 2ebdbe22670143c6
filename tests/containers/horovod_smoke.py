"""A 2-rank Horovod (Gloo) training smoke, run inside the GPU image by test_gpu_image.py.

Usage (in the container): ``horovodrun --gloo -np 2 -H localhost:2 python horovod_smoke.py OUT.json``

Each rank starts from different weights and trains on its own data shard with
``hvd.DistributedOptimizer``; after the parameter broadcast and the gradient
allreduce every step, all ranks must hold identical weights and the loss must fall.
Rank 0 writes what it saw to OUT.json; any rank exits non-zero on a failed check.
"""

from __future__ import annotations

import json
import sys

import horovod.torch as hvd
import torch
import torch.nn.functional as F


def main(out: str) -> int:
    """Train 40 steps on 2 ranks and check the allreduce; returns the exit status."""
    hvd.init()
    torch.manual_seed(1000 + hvd.rank())  # different initial weights per rank: the broadcast must fix that
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05 * hvd.size())
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)

    teacher = torch.randn(16, 4, generator=torch.Generator().manual_seed(0))  # same task on every rank
    data = torch.Generator().manual_seed(100 + hvd.rank())  # a different shard per rank
    x = torch.randn(512, 16, generator=data)
    y = (x @ teacher).argmax(dim=1)
    losses = []
    for step in range(40):
        batch = slice((step * 32) % 512, (step * 32) % 512 + 32)
        opt.zero_grad()
        loss = F.cross_entropy(model(x[batch]), y[batch])
        loss.backward()  # type: ignore[no-untyped-call]
        opt.step()
        losses.append(float(hvd.allreduce(loss.detach(), op=hvd.Average)))

    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = hvd.allgather(flat.unsqueeze(0))
    ranks_sum = float(hvd.allreduce(torch.tensor([float(hvd.rank())]), op=hvd.Sum)[0])
    report = {
        "size": hvd.size(),
        "ranks_sum": ranks_sum,
        "weights_identical": bool(all(torch.equal(gathered[0], gathered[i]) for i in range(hvd.size()))),
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "gloo_enabled": bool(hvd.gloo_enabled()),
        "mpi_enabled": bool(hvd.mpi_enabled()),
        "nccl_built": bool(hvd.nccl_built()),
        "torch": torch.__version__,
    }
    ok = report["weights_identical"] and report["loss_last"] < report["loss_first"] and report["size"] == 2
    if hvd.rank() == 0:
        with open(out, "w") as f:
            json.dump(report, f)
    print(f"rank {hvd.rank()}: {report}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
