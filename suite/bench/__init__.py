"""Benchmarks that print figures (not tests): the CPU ladder and harness overhead (:mod:`.cpu`),
input-bound training and offloaded preprocessing (:mod:`.mnist`), the input pipelines against the
synthetic ceiling (:mod:`.pipelines`). The GPU ladder is ``trainbench ladder resnet50-gpu-horovod``
(:mod:`suite.ladder`)."""
