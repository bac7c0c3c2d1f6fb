"""Layer 6, how notebooks become the book.

- the runner, one module each: ``profiles`` (profiles and their checks), ``parameters``
  (what a profile may give a parameter: types, domains, files), ``requirements`` (the data
  and models a chapter needs, and whether they are here), ``cache`` (the execution cache),
  ``scheduling`` (which chapter waits for which, parallel runs), ``lock`` (one build of a
  profile at a time), ``build`` (staging the sources, the HTML build) and ``runner``
  (``racer book build``);
- ``staging``: the executed notebook as the reader sees it;
- ``chapter``: what every chapter does around its results (set-up, tables, figures, glued
  numbers); ``page``: how they appear on the page;
- ``bookcheck``: every page opened in headless Chromium, ``pagecheck``: what a page's HTML
  should never show (numbering gaps, reprs, stderr); ``cite``: BibTeX from CITATION.cff
  and the "cite this page" box; ``verdict``: the verdict panel that opens the report.
"""
