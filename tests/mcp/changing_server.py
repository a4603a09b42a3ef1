"""A small MCP server on the official Python SDK (`mcp` 2.x) for covo's MCP client tests
(gateway/tests/integration/mcp_client.rs): its tool list changes at run time
(`notifications/tools/list_changed`) and one tool is annotated destructive.
Runs over stdio: `python changing_server.py`; or over streamable HTTP on 127.0.0.1:
`python changing_server.py --http PORT --token TOKEN` (every request must carry
`Authorization: Bearer TOKEN`, else 401); or, with `--endless-pages`, as a server whose
`tools/list` never ends (every page has a next cursor), over stdio."""

import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ListToolsResult, ToolAnnotations


class EndlessPages(MCPServer):
    """Every tools/list page names the next one: a client must stop on its own."""

    async def _handle_list_tools(self, ctx, params):
        page = int(params.cursor) if params is not None and params.cursor else 0
        tools = [
            t.model_copy(update={"name": f"p{page}_{t.name}"}) for t in await self.list_tools()
        ]
        return ListToolsResult(tools=tools, next_cursor=str(page + 1))


server = (EndlessPages if "--endless-pages" in sys.argv else MCPServer)("changing")


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
def wipe_cache() -> str:
    """Erase the server's cache (irreversible)."""
    return "cache wiped"


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Add a new tool called NAME to this server, and tell the client its tool list changed."""

    def grown() -> str:
        return f"I am {name}"

    server.add_tool(grown, name=name, description=f"The grown tool {name}.")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


def serve_http(port: int, token: str) -> None:
    import uvicorn
    from starlette.responses import PlainTextResponse

    app = server.streamable_http_app(host="127.0.0.1")

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await PlainTextResponse("missing or wrong bearer token", status_code=401)(
                    scope, receive, send
                )
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--http" and sys.argv[3] == "--token":
        serve_http(int(sys.argv[2]), sys.argv[4])
    else:
        server.run()
