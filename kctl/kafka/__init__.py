"""kctl's Kafka clients: the only code outside kctl/spark that imports confluent-kafka or
kafka-python.

Which cluster a command talks to and with which settings (`bootstrap`, `clientprops`), the
clients made from them (`client`), the admin requests of every command with Kafka's errors
turned into one line and an exit code (`errors`, and a module per resource), and the
producer-side machinery `kctl produce` and `kctl bench` share (`delivery`, `transactions`).
Commands get clients, metadata and answers from here and never build a request themselves.
"""
