"""A judge's candidate hosts, started before any candidate is known."""
from __future__ import annotations

from kernel_mcp.worker.judge.session import CandidateSession


class Hosts:
    """A judge's candidate hosts: started at its boot, before any candidate is known, so interpreter,
    torch and the device context are ready when one is; more are started on demand (a baseline)."""

    def __init__(self, device_kind: str, run_token: str, profiler: bool, count: int):
        self.kind, self.run_token, self.profiler = device_kind, run_token, profiler
        self.device = ""  # set by warm(): hosts started later are warmed at once
        self.waiting = [self._start() for _ in range(count)]
        self.taken: list[CandidateSession] = []

    def _start(self) -> CandidateSession:
        session = CandidateSession(self.kind, self.run_token, self.profiler)
        if self.device:
            session.warm(self.device)
        return session

    def restart(self, device_kind: str) -> None:
        """The device turned out to be of another kind than guessed: start over with the right one."""
        count = len(self.waiting)
        self.close_waiting()
        self.kind = device_kind
        self.waiting = [self._start() for _ in range(count)]

    def warm(self, device: str) -> None:
        self.device = device
        for session in self.waiting:
            session.warm(device)

    def wait_booted(self) -> None:
        """Block until the hosts started so far have booted (a failure shows again when one is used)."""
        for session in self.waiting:
            session.wait_booted()

    def take(self) -> CandidateSession:
        """A host started earlier, else a new one (the caller closes it)."""
        session = self.waiting.pop(0) if self.waiting else self._start()
        self.taken.append(session)
        return session

    def served(self) -> bool:
        """Has any candidate been sent an input (a call or a timed call) in this judge?"""
        return any(session.served for session in self.taken)

    def prestart(self) -> None:
        """Start one more host now (a baseline will need it), booting while other work goes on."""
        self.waiting.append(self._start())

    def close_waiting(self) -> None:
        for session in self.waiting:
            session.close()
        self.waiting = []
