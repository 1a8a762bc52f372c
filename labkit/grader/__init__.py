"""``labs grade``: the instructor's tests against every student's work. See README.md here."""
