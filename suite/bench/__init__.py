"""Benchmarks that print figures (not tests): the CPU ladder and harness overhead (:mod:`.cpu`),
input-bound training and offloaded preprocessing (:mod:`.mnist`). The GPU ladder is ``trainbench ladder
resnet50-gpu-horovod`` (:mod:`suite.ladder`)."""
