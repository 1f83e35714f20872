"""mcp_bridge."""
