"""tests/install use the built distributions of tests/packaging (one build per session)."""

from tests.packaging.conftest import agent_env, shared_dir, wheels

__all__ = ["agent_env", "shared_dir", "wheels"]
