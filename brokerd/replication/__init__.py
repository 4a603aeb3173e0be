"""Follower-side replication: fetching from leaders, truncating divergent logs."""
