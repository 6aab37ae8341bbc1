"""The spec book (``akc book DIR``): the catalog, the readings, the scenarios, the properties and
every kernel's verdicts as a static site that opens from the file system.

:mod:`conformance.book.data` gathers what the pages show, :mod:`conformance.book.timeline` turns a
canonical trace into a readable timeline, :mod:`conformance.book.render` writes the pages with the
Jinja2 templates of ``templates/`` and the files of ``static/``.
"""
