"""The performance models shipped with FinePar, one JSON file per platform.

Package data, found through :mod:`importlib.resources` (see
:func:`finepar.perfmodel.model_sources`): the last place a model is looked
for, after ``$FINEPAR_MODELS`` and the user data directory.
"""
