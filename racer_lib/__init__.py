"""racer_lib: the library behind the RACER companion book.

Modules are named after the paper's objects: ``records`` (judge records, cost unit),
``simulate`` (calibrated simulated records), ``dro`` (KL worst cases), ``theory`` (the tabular
primal–dual of the appendix), ``evaluate`` (accuracy, cost, agreement),
``plots`` (one figure style), ``pipeline`` (papermill runner) and ``cli``.
"""

__version__ = "0.1.0"
