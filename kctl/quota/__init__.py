"""`kctl quota` (quota.py): client quotas of users and client ids. The requests, and Kafka's
names for quota entities, are kctl.kafka.quotas."""
