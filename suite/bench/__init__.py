"""Benchmarks that print figures (not tests): the CPU ladder and harness overhead (:mod:`.cpu`),
the GPU ladder (:mod:`.gpu`), input-bound training and offloaded preprocessing (:mod:`.mnist`)."""
