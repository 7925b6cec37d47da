"""Triage for maintainers (``cudadoctor triage``, docs/triage.md): a GitHub issue in, a diagnosis
and a reply out. ``refs`` reads OWNER/REPO#N and issue URLs, ``github`` is the REST client,
``issue`` reads an issue (from the API or a file) and joins the text that is diagnosed, ``reply``
writes the Markdown reply and the JSON, and ``run`` is the pipeline, which wraps the API's
:func:`cudadoctor.api.diagnose_text`."""
