"""`kctl topic` (topic.py) and what only it uses: the document `describe` shows (topicinfo),
the offsets `delete-records` cuts at, the producer rows of `producers`, the plans `reassign`
takes and the segment files `segments` lists."""
