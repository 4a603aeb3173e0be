"""MirrorMaker 2's connectors: MirrorSource copies topics from one cluster to another (as a
Spark query, exactly once), MirrorCheckpoint translates consumer groups' offsets through the
offset syncs the source writes, MirrorHeartbeat emits heartbeats. Names, settings and record
formats are MM2's, so tools made for MM2 (RemoteClusterUtils, its consumers) read ours."""
