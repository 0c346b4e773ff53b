"""The suite's reports, one concern a module, in the order a failure flows through them.

``annotate`` (on the process that ran the test) -> ``causes`` and ``evidence``
(what broke, and the history that shows it) -> ``json_report`` (one file per
run, on the controller) -> ``verdicts`` (per guarantee) -> the renderers:
``text`` (the terminal), ``matrix`` and ``matrix_html`` (many runs as one
table), ``page`` and ``timeline`` (one run as a page, each failing history
drawn). ``labels`` is the vocabulary all of them share and imports none of
them.

``nomnesia.suite.reporting`` and ``nomnesia.suite.report_html`` re-export the
public names from where callers have always imported them.
"""
