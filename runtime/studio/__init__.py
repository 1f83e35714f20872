"""`pal studio`: a local web page over a store of threads (docs/studio.md).

    async with open_store(url) as store:
        studio = Studio(store, token=new_token(), model=model)
        async with serving_studio(studio, port=0) as served:
            print(served.url)                      # http://127.0.0.1:PORT/?token=...

The threads list, a thread's timeline and its program's flowchart, live updates of runs in any process, and
the actions answer, resume, fork and download. Needs the `studio` extra (Starlette, uvicorn, and the MCP SDK
for its Host/Origin checks); this package imports them only when a studio is made.
"""

from __future__ import annotations

from .app import Studio
from .security import new_token
from .server import StudioEndpoint, serving_studio

__all__ = ["Studio", "StudioEndpoint", "new_token", "serving_studio"]
