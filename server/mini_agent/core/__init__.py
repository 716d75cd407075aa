"""The agent core: sessions, the runtime that steps them, and the values and events that pass in and out.

Holds contracts, session, events, errors, ports, runtime, book, checkpoints, flight, approvals,
stepper, loops, trajectory, budget and context. Pure: no I/O, no protocol, no adapter. It may import
the standard library, pydantic and `mini_agent.plumbing`, and nothing else of ours; everything
outside reaches it through `ports`.
"""
