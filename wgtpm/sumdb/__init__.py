"""The checksum database: Go's sumdb formats and a verifying client, with no I/O of its own."""
