# Type stubs of the Python package writ (docs/python.md).
import os
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, Literal, NamedTuple, TypeAlias

from typing_extensions import Buffer

__version__: str

Until: TypeAlias = Literal["transport", "received", "validated", "processed", "retained"]
Retention: TypeAlias = Literal["volatile", "process-restart", "power-loss"]
RuleName: TypeAlias = Literal["xxh3-128", "crc32c", "sha256"]
Source: TypeAlias = bytes | bytearray | memoryview | Any  # any C-contiguous buffer
Sendable: TypeAlias = Source | Sequence[Source] | str | os.PathLike[str]

class Error(Exception):
    category: str
    exit_code: int
    message: str
    code: str | None
    outcome: Outcome | None
    def __init__(self, message: str, code: str | None = ..., outcome: Outcome | None = ...) -> None: ...

class NotFoundError(Error, LookupError): ...
class UsageError(Error, ValueError): ...
class RefusedError(Error): ...
class TransportError(Error): ...
class ValidationError(Error): ...
class RetentionError(Error): ...

class Outcome:
    document: dict[str, Any]
    delivery: dict[str, Any]
    receipts: list[dict[str, Any]]
    reached: dict[str, str | None]
    requested: dict[str, Any]
    context: dict[str, Any]
    work_completions: list[dict[str, Any]]
    bytes: int
    bytes_moved: bool
    source: dict[str, str] | None
    error: str | None
    @property
    def digest(self) -> str: ...
    def receipt(self, rung: str) -> dict[str, Any] | None: ...

class Handle:
    id: str
    def __init__(self, id: str) -> None: ...
    def done(self) -> bool: ...
    def result(self, timeout: float | None = ...) -> Outcome: ...
    def add_done_callback(self, fn: Callable[[Handle], object]) -> None: ...
    def __await__(self) -> Generator[Any, None, Outcome]: ...

class Sender:
    to: str
    def __init__(self, to: str, identity: str | os.PathLike[str] | None = ...,
                 provider: str | None = ..., depth: int = ..., connect_timeout: float = ...,
                 in_flight: int = ..., ring: bool = ...) -> None: ...
    def send(self, obj: Sendable, id: str | None = ..., until: Until = ...,
             retention: Retention | None = ..., rule: RuleName = ..., chunk_size: int = ...,
             level: Literal["transport", "delivery"] = ...,
             source: Literal["auto", "zero-copy", "staging"] = ..., max_attempts: int = ...,
             stall_timeout: float = ..., target: str | None = ...,
             target_offset: int = ..., target_pages: Sequence[int] | None = ...) -> Outcome: ...
    def submit(self, obj: Sendable, id: str | None = ..., until: Until = ...,
               retention: Retention | None = ..., rule: RuleName = ..., chunk_size: int = ...,
               level: Literal["transport", "delivery"] = ...,
               source: Literal["auto", "zero-copy", "staging"] = ..., max_attempts: int = ...,
               stall_timeout: float = ..., target: str | None = ...,
               target_offset: int = ..., target_pages: Sequence[int] | None = ...) -> Handle: ...
    send_replicated: staticmethod[..., ReplicatedOutcome]  # = writ.send_replicated
    @property
    def max_in_flight(self) -> int: ...
    @property
    def usable(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self) -> Sender: ...
    def __exit__(self, *exc: object) -> Literal[False]: ...

class Delivery:
    id: str
    bytes: int
    digest: str
    stop_requested: bool
    def read(self, offset: int = ..., size: int = ...) -> bytes: ...
    def readinto(self, target: Buffer, offset: int = ...) -> int: ...

class Arrival:
    id: str
    bytes: int
    rung: str
    retention: str
    @property
    def receipts(self) -> list[dict[str, Any]] | None: ...
    @property
    def regions(self) -> list[int] | None: ...
    @property
    def digest(self) -> str | None: ...
    @property
    def rule(self) -> str | None: ...
    @property
    def held_until(self) -> str | None: ...
    def read(self, region: int | None = ..., out: Buffer | None = ...) -> Any: ...
    def view(self, region: int | None = ...) -> memoryview: ...

class TargetDelivery(NamedTuple):
    target: str
    id: str
    offset: int
    bytes: int
    ok: bool
    why: str
    pages: list[int]

class Receiver:
    address: str
    provider: str
    key_id: str
    public_key: str
    def __init__(self, listen: str = ..., provider: str | None = ...,
                 data: str | os.PathLike[str] | None = ...,
                 out: str | os.PathLike[str] | None = ...,
                 processing: Callable[[Delivery], object] | None = ...,
                 identity: str | os.PathLike[str] | None = ...,
                 allow: str | os.PathLike[str] | None = ..., receiver_id: str | None = ...,
                 max_delivery_bytes: int | None = ..., window_pool_bytes: int | None = ...,
                 window_bytes: int | None = ..., volatile_capacity_bytes: int | None = ...,
                 processing_name: str | None = ...,
                 on_delivery: Callable[[Arrival], object] | None = ...,
                 ring_slots: int | None = ..., ring_slot_size: int | None = ...,
                 max_deliveries_per_sender: int | None = ...,
                 arrivals: int | None = ...) -> None: ...
    def next_delivery(self, timeout: float | None = ...) -> Arrival | None: ...
    def deliveries(self, timeout: float | None = ...) -> Iterator[Arrival]: ...
    @property
    def arrivals_dropped(self) -> int: ...
    def held(self, id: str) -> Arrival: ...
    def read(self, id: str, region: int | None = ..., out: Buffer | None = ...) -> Any: ...
    def view(self, id: str, region: int | None = ...) -> memoryview: ...
    def remove(self, id: str, force: bool = ...) -> dict[str, Any]: ...
    def expose(self, name: str, array: Buffer, page_size: int | None = ...,
               on_delivery: Callable[[TargetDelivery], object] | None = ...) -> None: ...
    def revoke(self, name: str) -> None: ...
    def close(self) -> None: ...
    def shutdown(self, drain: float = ...) -> dict[str, Any]: ...
    def __enter__(self) -> Receiver: ...
    def __exit__(self, *exc: object) -> Literal[False]: ...

def audit(bundle: str | bytes | os.PathLike[str] | dict[str, Any]) -> dict[str, Any]: ...
def verify(receipt: str | bytes | os.PathLike[str] | dict[str, Any],
           key: str | os.PathLike[str] | None = ...) -> dict[str, Any]: ...

class Replica:
    address: str
    counted: bool
    why_not: str | None
    outcome: Outcome | None

class ReplicatedOutcome:
    replicas: list[Replica]
    certificate: dict[str, Any] | None
    evidence: dict[str, Any]
    @property
    def counted(self) -> list[Replica]: ...

def send_replicated(obj: Source | str | os.PathLike[str], k: int = ...,
                    cluster: str | None = ..., receivers: Sequence[str] | None = ...,
                    id: str | None = ..., replica_retention: Retention = ...,
                    identity: str | os.PathLike[str] | None = ..., provider: str | None = ...,
                    rule: RuleName = ..., chunk_size: int = ...,
                    stall_timeout: float = ...) -> ReplicatedOutcome: ...
