"""Tools people already have, as fllm domains: OpenAI-style tool lists and MCP tool listings.

``read_tool_list`` turns the parsed JSON of a tool list into :class:`ImportedTool` records;
``write_domain`` and ``write_bindings`` write the tool domain and the bindings skeleton as YAML
text, with every decision the importer made as a comment the user can edit.
"""

from fllm_cli.toolset.importer import (
    ImportedTool,
    ImportReport,
    read_tool_list,
    write_bindings,
    write_domain,
)

__all__ = ["ImportReport", "ImportedTool", "read_tool_list", "write_bindings", "write_domain"]
