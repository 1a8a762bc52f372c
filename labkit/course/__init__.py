"""The course itself: its labs in study order (``registry``), their hints (``hints``), their
galleries of classic bugs (``bugs``), and running a lab's tests in a subprocess (``runner``,
``pytest_plugin``), which the ``labs`` command and the grader share."""
