"""Is the result physically possible? Cross-field checks that a forger who recomputes the summary and
reseals the file still has to pass.

The code and the digest recipe are public, so arithmetic alone proves nothing: anyone can edit the
raw records, recompute the summary with :func:`harness.stats.summarize` and seal the file with
:func:`suite.results.seal`. What they cannot easily do is keep every *physical* relation between the
fields true, because the run recorded the same instants and the same hardware several times, from
independent sources (the harness's clock, the sampler's clock, the kernel's CPU counters, the CPU's
flags, the rank's own decisions). Each relation is recomputed from what the result records, never
read from a stored flag. The classes of forgery, and what catches each:

=====================================================  ======================================================
forgery (and the class it stands for)                  check (finding code)
=====================================================  ======================================================
windows and steps shortened, summary recomputed        the readings run past the timed work; the readings'
(any edit of the windows' clock alone)                 CPU-seconds against the windows (``clock-mismatch``)
the sampler's timestamps scaled with them              readings closer than the sampler's interval; the
(any edit of one clock that the kernel also counted)   kernel's offered CPU-seconds against cores x the
                                                       readings' clock; CPU-seconds that are not whole kernel
                                                       ticks (``clock-mismatch``); more CPU time than the
                                                       cores allowed hold (``cpu-time-impossible``)
others' CPU time or steal zeroed to hide interference  per-core utilization against the accounted CPU time,
                                                       per measurement window (``interference-hidden``)
the ISA rewritten (AVX2 only) under a native-bf16 run  the precision decision recomputed on the recorded ISA
(any precision or ISA claim the hardware cannot make)  (``precision-impossible``); the ISA record against its
                                                       own features, caps, the CPU flags, the CPU model and
                                                       torch's capability (``isa-inconsistent``)
a CPU run relabelled as trained on a GPU               the named GPU among the recorded GPUs; a CPU workload
(any device claim the environment does not hold)       names no GPU device (``device-impossible``); a GPU run
                                                       carries device telemetry (hook, issue 37)
start time moved (e.g. to pass as another run)         ``started_at`` is ``origin_unix_s``; every rank's timed
                                                       work precedes ``created_at``; nothing is created in
                                                       the future (``timestamps``)
step times edited apart from the timeline              steps never overlap and end inside their window
                                                       (``records``)
more cores claimed than the machine has                the readings' core count against ``logical_cores``;
                                                       the affinity against it (``environment-inconsistent``)
=====================================================  ======================================================

What these checks cannot catch is a forgery that keeps every relation true: all times and all
CPU-seconds scaled together and rounded to whole ticks, the sampler interval changed to match, the
hardware record rewritten as a whole. Such a file describes another, faster run that could have
happened; only measuring it again tells: ``trainbench reproduce`` (:mod:`suite.validation.reproduction`).
"""

from __future__ import annotations

from suite.results import Result
from suite.validation.findings import Findings
from suite.validation.hardware_claims import check_hardware_claims
from suite.validation.sampler_checks import check_sampler
from suite.validation.timestamps import check_timestamps


def check_physical(result: Result, where: str, findings: Findings, records_ok: bool = True) -> None:
    """Every physical cross-field check of one complete result (see the module docstring).

    Args:
        records_ok: the raw records are consistent (:func:`suite.validation.record_checks.check_records`);
            the sampler's readings are held against the windows only then.
    """
    check_timestamps(result, where, findings)
    check_hardware_claims(result, where, findings)
    if records_ok:
        check_sampler(result, where, findings)
