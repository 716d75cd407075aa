"""The client capabilities the LSP tests send in `initialize`: no capabilities at all, an editor's
(VS Code-like), and encodings the daemon cannot use."""

from __future__ import annotations

from typing import Any

CLIENTS: dict[str, dict[str, Any]] = {
    "bare": {},
    "editor-like": {
        "general": {"positionEncodings": ["utf-32", "utf-16"]},
        "textDocument": {"synchronization": {"willSave": True, "willSaveWaitUntil": True, "didSave": True},
                         "rename": {"prepareSupport": True}},
        "workspace": {"fileOperations": {"didCreate": True, "willRename": True}, "workspaceFolders": True},
        "notebookDocument": {"synchronization": {"dynamicRegistration": True}},
        "window": {"workDoneProgress": True},
    },
    "unknown encodings": {"general": {"positionEncodings": ["utf-7"]}},
}
