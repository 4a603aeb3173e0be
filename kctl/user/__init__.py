"""`kctl user` (user.py): SCRAM users, and reading a password from the option, stdin or a
prompt. The credentials go over the wire through kctl.kafka.scram."""
