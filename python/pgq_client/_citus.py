"""Where a Worker finds its schema on Citus, under its former module (:mod:`.installer.citus`)."""

from .installer.citus import node_conninfo, schema_node

__all__ = ["node_conninfo", "schema_node"]
