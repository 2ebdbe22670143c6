"""Which optional part of the install (a pip extra of pyproject.toml) provides what, and the
clear error when a command needs a part that is not installed.

The core install (``pip install trainbench``; ``make validate``) is what the submission side
needs: ``validate``, ``submit``, ``bands``, ``show``, ``compare`` of result files. Everything
heavy is an extra:

============  =================================  ==========================================
extra         provides                           needed by
============  =================================  ==========================================
plots         matplotlib                         ``report`` (the ranking chart), plots
train         torch, torchvision (+ plots)       ``run`` and ``bench`` on this host
tracking      mlflow                             logging runs and reports to MLflow
containers    the Docker SDK                     ``run --runtime docker``, ``images``
run           train + tracking + containers      ``make run`` (the main job)
offload       TensorFlow (tf.data service)       ``data-service``, ``bench-mnist`` part 2
mlperf        mlperf-logging                     ``export mlperf``, ``submit --mlperf``
dali          NVIDIA DALI (nvJPEG)               ``run`` with ``input_pipeline=dali``, ``bench-pipelines``
dev           run + offload + mlperf + tools     ``make test``, ``make lint``
============  =================================  ==========================================

A command that needs a missing extra fails with :class:`MissingExtra` (exit 2), whose message
names the extra and the command that installs it, never with a traceback: commands call
:func:`require` before they start work, and the command line maps any other
``ModuleNotFoundError`` of a known library through :func:`missing_extra`.
"""

from __future__ import annotations

import importlib.util

from suite.errors import BadInput

EXTRAS: dict[str, tuple[str, ...]] = {
    "plots": ("matplotlib",),
    "train": ("torch", "torchvision", "PIL", "matplotlib", "requests"),
    "tracking": ("mlflow", "filelock"),
    "containers": ("docker",),
    "offload": ("tensorflow",),
    "mlperf": ("mlperf_logging",),
    "dali": ("nvidia.dali",),
}
"""Extra -> the top-level modules it installs that trainbench imports (pyproject.toml's
``[project.optional-dependencies]`` is the source of truth; a test keeps the two in step)."""

MAKE_TARGET: dict[str, str] = {
    "plots": "make report",
    "train": "make run",
    "tracking": "make run",
    "containers": "make run",
    "offload": "make test",
    "mlperf": "make test",
}
"""Extra -> the make target that installs it in a clone (into $(VENV), default .venv); none for ``dali``."""

_OWNER = {module: extra for extra, modules in reversed(EXTRAS.items()) for module in modules}
"""Module -> the first extra of :data:`EXTRAS` that provides it (the smallest: matplotlib -> plots)."""


class MissingExtra(BadInput):
    """A command needs an optional part of the install that is missing (exit 2; nothing ran)."""


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or blocked package counts as missing
        return False


def _message(extra: str, modules: list[str], what: str) -> str:
    return (
        f"{what} needs {', '.join(modules)}, which the '{extra}' extra installs and this environment lacks. "
        f"Install it with `pip install 'trainbench[{extra}]'` (in a clone: "
        + (f"`{MAKE_TARGET[extra]}`, or " if extra in MAKE_TARGET else "")
        + f"`pip install -e '.[{extra}]'`)."
    )


def require(extra: str, what: str) -> None:
    """Check that every module of ``extra`` can be imported (nothing is imported).

    Args:
        extra: a key of :data:`EXTRAS`.
        what: the command or feature that needs it, for the message (e.g. ``"trainbench run"``).

    Raises:
        MissingExtra: a module of the extra is missing; the message names the extra and how to install it.
        KeyError: ``extra`` is not a known extra (a programming error).
    """
    missing = [m for m in EXTRAS[extra] if not _installed(m)]
    if missing:
        raise MissingExtra(_message(extra, missing, what))


def missing_extra(exc: ModuleNotFoundError, what: str = "this command") -> MissingExtra | None:
    """The :class:`MissingExtra` for an import that failed on a library an extra provides, else None
    (a module trainbench does not know stays a ``ModuleNotFoundError``: a bug, not a missing extra)."""
    top = (exc.name or "").split(".")[0]
    extra = _OWNER.get(top)
    if extra is None:
        return None
    return MissingExtra(_message(extra, [top], what))
