"""Submissions and their validation: the tree walk (:mod:`.tree`, :mod:`.system_files`), the checks
of one result (:mod:`.result_checks`, :mod:`.record_checks`), scoring (:mod:`.scoring`), reference
bands (:mod:`.bands`, :mod:`.bands_file`, :mod:`.derive`), what the validator returns
(:mod:`.outcomes`, :mod:`.findings`, :mod:`.render`), ``submit`` (:mod:`.submit`) and the ranking
of ``trainbench report`` (:mod:`.ranking`, :mod:`.ranking_render`).

The validator depends on the result model (:mod:`suite.results`), the division rules
(:mod:`suite.rules`) and the bounded reader (:mod:`suite.files`); nothing of a run
(``suite.run``) imports this package.
"""
