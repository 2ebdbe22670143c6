"""Submissions and their validation: layout, rules, reference bands, findings, submit and report.

Kept free of imports so that ``suite.runner`` can use :mod:`suite.validation.rules`
without loading the rest of the validator.
"""
