"""Container images and the Docker runtime: the only part of trainbench that talks to Docker.

- :mod:`suite.containers.images`: the image registry, reproducible build contexts,
  reuse of images whose inputs (lock files, Dockerfile, sources) are unchanged, and
  builds through the Docker SDK with the build log streamed.
- :mod:`suite.containers.lock`: the hash-pinned lock files the images install with
  ``pip --require-hashes`` (generated with ``uv pip compile --generate-hashes``).
- :mod:`suite.containers.base`: an offline Debian base image (debootstrap + ``docker import``).
- :mod:`suite.containers.runtime`: ``trainbench run --runtime docker``: the rank's
  command inside ``docker run``, with the run directory mounted at the same path.

Their commands are ``suite.commands.images`` (``trainbench images``) and the ``--runtime``
options of ``suite.commands.options``.

``harness/`` and ``workloads/`` never import this package.
"""
