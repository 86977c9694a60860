"""The trace family: a run as plain data, written to disk and read back, every field checked.

``_result`` holds the run (``Result``, ``Imported``) and ``_records`` its parts (``Step``,
``CallRecord``, ``Request``, what a held run keeps), each written as dicts; ``_compact`` writes
them as files hold them (format version 2: each text once, defaults left out); ``_read`` reads
either back checking every field (a field by ``_values``, the steps, calls and messages by
``_read_steps``, after ``_read_fast`` has tried the common case with exact type tests);
``_journal`` writes a run's JSON Lines file a step at a time and loads any trace file (other
frameworks' through ``budgetloop._importers``); ``_files`` owns the paths (a new file never
truncates an old one); ``_fork`` reads a run's history (where a fork may start, what a step
was sent); ``_html`` is a run as one static page.
"""
