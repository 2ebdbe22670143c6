"""Linking a claim and its reproduction in MLflow (``trainbench reproduce``).

The reproduction's run is logged like any run (:func:`suite.tracking.log_result`); these tags then
tie the two together, both ways, so either run page shows the other and the verdict:

- on the reproduction's run: ``trainbench.reproduces`` (the claim's result id),
  ``trainbench.reproduces_digest``, ``trainbench.reproduces_run`` (the claim's MLflow run, when the
  store has it), ``trainbench.reproduction.verdict``, ``trainbench.reproduction.ratio`` (claimed /
  measured, with its 95% CI) and ``trainbench.reproduction.anyway``;
- on the claim's run, when the store has it (found by its ``trainbench.result_id`` tag):
  ``trainbench.reproduced_by.<id8>`` = ``<verdict> by <reproduction result id> (MLflow run <id>)``
  for each reproduction, and ``trainbench.reproduction.latest`` = the newest verdict.
"""

from __future__ import annotations

from mlflow.tracking import MlflowClient

from suite.results import Result
from suite.tracking.store import TrackingError, store_lock


def _ratio_text(result: Result) -> str:
    rep = result.reproduction
    assert rep is not None
    ci = f" (95% CI {rep.ratio_ci95[0]:.3f}-{rep.ratio_ci95[1]:.3f})" if rep.ratio_ci95 else " (no interval)"
    return f"{rep.ratio:.3f}{ci}, tolerance ±{rep.tolerance:.0%}"


def tag_reproduction(tracking_uri: str, reproduction_run_id: str, result: Result) -> str | None:
    """Tag the reproduction's MLflow run and the claim's (see the module docstring).

    Args:
        tracking_uri: the store both were logged to.
        reproduction_run_id: the MLflow run of ``result`` (:func:`suite.tracking.log_result`).
        result: the reproduction's result, with its ``reproduction`` verdict.

    Returns:
        The claim's MLflow run id, or None when the store does not hold the claim.

    Raises:
        ValueError: ``result`` carries no reproduction verdict.
        TrackingError: the store could not be reached or refused a tag.
    """
    rep = result.reproduction
    if rep is None:
        raise ValueError("the result carries no reproduction verdict")
    with store_lock(tracking_uri):
        try:
            client = MlflowClient(tracking_uri=tracking_uri)
            exp = client.get_experiment_by_name(result.workload)
            runs = (
                client.search_runs(
                    [exp.experiment_id], filter_string=f"tags.`trainbench.result_id` = '{rep.claim_run_id}'"
                )
                if exp is not None
                else []
            )
            claim_run = next((r.info.run_id for r in runs if r.info.run_id != reproduction_run_id), None)
            tags = {
                "trainbench.reproduces": rep.claim_run_id,
                "trainbench.reproduces_digest": rep.claim_digest,
                "trainbench.reproduction.verdict": rep.verdict,
                "trainbench.reproduction.ratio": _ratio_text(result),
                "trainbench.reproduction.anyway": "true" if rep.anyway else "false",
            }
            if claim_run is not None:
                tags["trainbench.reproduces_run"] = claim_run
            for key, value in tags.items():
                client.set_tag(reproduction_run_id, key, value)
            if claim_run is not None:
                by = f"{rep.verdict} by {result.run_id} (MLflow run {reproduction_run_id})"
                client.set_tag(claim_run, f"trainbench.reproduced_by.{result.run_id[:8]}", by)
                client.set_tag(claim_run, "trainbench.reproduction.latest", f"{rep.verdict}: {_ratio_text(result)}")
        except Exception as exc:
            raise TrackingError(
                f"MLflow at {tracking_uri} could not link the reproduction to its claim: {exc}"
            ) from exc
    return claim_run
