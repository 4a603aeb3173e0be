"""Security: listeners and TLS, SASL authentication (PLAIN, SCRAM), principals, ACLs and the
authorizer (Kafka's StandardAuthorizer rules)."""
