"""Container images, builds and locks: the only part of trainbench that talks to Docker.

- :mod:`suite.containers.images`: the image registry, reproducible build contexts and
  the inputs digest that decides whether an image can be reused;
- :mod:`suite.containers.build`: builds through the Docker SDK with the build log
  streamed, or reuse of an image whose inputs are unchanged;
- :mod:`suite.containers.requirements` and :mod:`suite.containers.lock`: what each
  hash-pinned lock file pins, and checking or generating them (``uv pip install --require-hashes``,
  ``uv pip compile --generate-hashes``);
- :mod:`suite.containers.base`: an offline Debian base image (debootstrap + ``docker import``);
- :mod:`suite.containers.slurm_cluster`: the demo Slurm cluster's containers and node image;
- :mod:`suite.containers.service`: the tf.data service in CPU-pinned containers;
- :mod:`suite.containers.engine` and :mod:`suite.containers.errors`: the engine's address
  and the errors (importable without the SDK).

Their commands are ``suite.commands.images`` (``trainbench images``). ``--runtime docker``
(:mod:`suite.runtimes.docker`) runs a rank in an image through the docker CLI, and reaches the
engine through :mod:`suite.containers.engine`.

``harness/`` and ``workloads/`` never import this package.
"""
