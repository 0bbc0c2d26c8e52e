"""Publishing: checks, a clean build, the release and its targets (see _target.py)."""
