"""The diagnosis of text: what people and programs print when a GPU stack fails, turned into
ranked causes.

text ─▶ :mod:`.intake` (the blocks of machine output read into facts, the error lines found)
     ─▶ :mod:`.matching` (the known errors: signatures and the error-code vocabularies)
     ─▶ :mod:`.causes` (each possible cause: holds, ruled out by a positive fact, or cannot tell)
     ─▶ :mod:`.explanation` (an error message explained) and :mod:`.paste` (a pasted report's
        causes ranked, root first, and what to paste next)

Pure: a text, the compatibility data and, where a machine was checked, its snapshot and findings
in; results out. Probing and running the checks is the API's job (:mod:`cudadoctor.api`); the
integrations (``cudadoctor run``, the excepthook, triage, the CLI) call it.
"""
