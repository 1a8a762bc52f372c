"""The course itself: its labs in study order (``registry``), their hints (``hints``), their
galleries of classic bugs (``bugs``), and running a lab's tests in a subprocess (``runner``,
``pytest_plugin``; many runs forked from one warm interpreter: ``warm``), which the ``labs``
command, the grader and the maintainers' checks share."""
