"""The given checks lose their fallback for a machine without torch (``torch = None``).

Exercises 1-2 still import, but exercise 3's check ``if torch is None`` meets a name that does not
exist. Symptom: NameError instead of a ModuleNotFoundError with the install command.
"""

CAUGHT_BY = ["test_exercises_1_and_2_need_numpy_only"]

SOURCE = "_walkthrough_checks.py"  # the given input checks

EDIT = (
    "else:\n    torch = None\n",
    "else:\n    pass\n",
)
