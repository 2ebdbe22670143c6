"""The versioned result file: model and digest (:mod:`.model`), reading and writing (:mod:`.io`),
upgrades of older schema versions (:mod:`.migrations`)."""

from suite.results.io import ResultError, check_summary, load_document, read_result, write_result
from suite.results.model import (
    SCHEMA_PATH,
    SCHEMA_VERSION,
    CostRecord,
    Diagnosis,
    Provenance,
    Result,
    Runtime,
    Scaling,
    canonical_bytes,
    compute_digest,
    json_schema,
    seal,
    verify_digest,
)

__all__ = [
    "SCHEMA_PATH",
    "SCHEMA_VERSION",
    "CostRecord",
    "Diagnosis",
    "Provenance",
    "Result",
    "ResultError",
    "Runtime",
    "Scaling",
    "canonical_bytes",
    "check_summary",
    "compute_digest",
    "json_schema",
    "load_document",
    "read_result",
    "seal",
    "verify_digest",
    "write_result",
]
