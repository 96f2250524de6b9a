"""The summary dialects' parts (MusePi profile, issue 11); `.._summary_dialects` is their face.

`_js` keeps JavaScript's value semantics, `_parts` the message parts and shared transcript
shapes, `_tagged` and `_templates` the renderers per dialect family, `_legacy` the
no-dialect serializer, `_prepare` what every dialect renders, and `_models` which dialect
a model id reads.
"""
