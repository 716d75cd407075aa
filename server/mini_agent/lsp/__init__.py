"""The LSP door: `agent/*` over LSP-framed JSON-RPC on stdio, built on pygls 2.

`boot` answers `initialize` before pygls loads; `server` is the pygls server and the handlers; `params`
the `agent/*` request models; `wire` the camelCase rendering of the core's values and events; `progress`
`$/progress` and cancellation; `framing` and `readahead` the stdin reader; `pygls_compat` every use of a
pygls private member. Translates only: may import `app`, the adapters, `core` and `plumbing`, never
another door. Imported lazily: this module stays empty so `boot` starts fast.
"""
