"""The conformance suite, collected by ``pytest --pyargs conformance.suite --kernel=pkg.mod:factory``
(or ``akc run``): the feature files' scenarios (``test_features.py``) and the hypothesis
properties (``test_prop_*.py``)."""
