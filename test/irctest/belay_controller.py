"""BelayController: an irctest server controller that puts Belay's IRC client listener in front of a real IRC server.

irctest (https://github.com/progval/irctest) speaks to "the server" as anonymous clients; Belay's listener wants every
connection signed in as `account/network` (docs/contract.md "The IRC client listener"). So the controller runs, per
pytest process, one `belay serve` (a fresh PostgreSQL database, the listener on loopback, one account `irctest`), and
per test case one upstream server (ngircd, or InspIRCd with BELAY_IRCTEST_UPSTREAM=inspircd) and a small relay on
the port irctest connects to. For each client connection the relay waits for the client's NICK (and USER, when it
follows at once), adds a network for that nick on the upstream through the listener's own `BOUNCER ADDNETWORK`
(soju.im/bouncer-networks), waits until it is connected, and then slips `PASS irctest/<netid>:<password>` in before
the client's NICK. Everything else passes unchanged both ways, so each irctest client is one Belay member's network,
seen through Belay exactly as an IRC client sees it. A client that signs in with SASL as an account `registerUser`
made (a Belay account; the relay maps irctest's short passwords to Belay's, see `belay_password`) gets a network of
that account instead, named in its USER line.

Concurrency rule: irctest drives the controller from one thread; each relayed connection has two threads (one per
direction) that share only the connection's own flags; network changes of one account are serialised on that
account's control connection by its lock.
"""
from __future__ import annotations

import atexit
import base64
import ctypes
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple, Type

from irctest.basecontrollers import BaseServerController, DirectoryBasedController, TestCaseControllerConfig
from irctest.runner import NotImplementedByController
from irctest.specifications import Capabilities

from upstream_server import upstream_server

# The checkout to run (default: this one); BELAY_IRCTEST_REPO names another, e.g. a `git archive` of a commit.
REPO = Path(os.environ.get("BELAY_IRCTEST_REPO") or Path(__file__).resolve().parents[2])
PASSWORD = "irctest-sesame"
ACCOUNT = "irctest"
DATABASE_SERVER = os.environ.get("BELAY_IRCTEST_DATABASE", "postgres://postgres@127.0.0.1:5432")
UPSTREAM = os.environ.get("BELAY_IRCTEST_UPSTREAM", "ngircd")
# How long a network may take to connect before the client is told it failed.
CONNECT_TIMEOUT = 15.0
# A PLAIN payload held to map its password is at most this many 400-byte chunks; a longer one passes as it came.
SASL_CHUNKS_HELD = 8
# The longest one test may take (see BelayController.run).
TEST_DEADLINE = float(os.environ.get("BELAY_IRCTEST_TEST_DEADLINE", "90"))
# Lines from the upstream reach the client after Belay's own PONG to irctest's synchronising PING (Belay answers PING
# itself, as soju does), so every read waits this long first, as irctest does for servers that answer out of order.
SYNC_SLEEP = float(os.environ.get("BELAY_IRCTEST_SYNC_SLEEP", "0.2"))

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, proc: Optional[subprocess.Popen], what: str, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on {port}")


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when pytest dies, however it dies (prctl PR_SET_PDEATHSIG), so that no
    `belay serve` outlives its run."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except OSError:
        pass


def _own_session_dying_with_parent() -> None:
    """irctest's default for its servers (a session of their own, killed as a group), and gone with pytest."""
    os.setsid()
    _die_with_parent()


def _command(line: str) -> Tuple[str, List[str]]:
    """The command and parameters of an IRC line (tags and source skipped)."""
    rest = line
    if rest.startswith("@"):
        rest = rest.split(" ", 1)[1] if " " in rest else ""
    if rest.startswith(":"):
        rest = rest.split(" ", 1)[1] if " " in rest else ""
    trailing: Optional[str] = None
    if " :" in rest:
        rest, trailing = rest.split(" :", 1)
    words = rest.split()
    params = words[1:] + ([trailing] if trailing is not None else [])
    return (words[0].upper() if words else "", params)


class _Belay:
    """One `belay serve` for the pytest process, with its database and its control connection."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="belay-irctest-"))
        self.database = f"belay_irctest_{os.getpid()}_{int(time.time())}"
        subprocess.run(["psql", f"{DATABASE_SERVER}/postgres", "-qc", f'CREATE DATABASE "{self.database}"'], check=True)
        self.http_port = _free_port()
        self.listen_port = _free_port()
        self.env = {
            **os.environ,
            "DATABASE_URL": f"{DATABASE_SERVER}/{self.database}",
            "BELAY_DATA_DIR": str(self.directory),
            "BELAY_IRC_LISTEN": f"127.0.0.1:{self.listen_port}",
            "HOST": "127.0.0.1",
            "PORT": str(self.http_port),
            "LOG_FORMAT": "json",
        }
        subprocess.run(["node", "scripts/ensure-built.mjs"], cwd=REPO, check=True)
        self.log = open(self.directory / "belay.log", "wb")
        self.proc = subprocess.Popen(["node", "bin/belay", "serve"], cwd=REPO, env=self.env, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent)
        deadline = time.time() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"belay serve exited; see {self.directory / 'belay.log'}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/healthz", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                raise RuntimeError("belay serve did not become healthy")
            time.sleep(0.2)
        self.passwords: Dict[str, str] = {}
        self._controls: Dict[str, _Control] = {}
        self._controls_lock = threading.Lock()
        self.add_account(ACCOUNT, PASSWORD)
        _wait_port(self.listen_port, self.proc, "Belay's IRC listener")

    def cli(self, args: List[str], stdin: str = "") -> subprocess.CompletedProcess:
        return subprocess.run(["node", "bin/belay", *args], cwd=REPO, env=self.env, input=stdin.encode(),
                              capture_output=True)

    def add_account(self, name: str, password: str) -> None:
        """A Belay account; `password` is the one irctest uses, stored as `belay_password(password)`."""
        done = self.cli(["account", "add", name], belay_password(password) + "\n")
        if done.returncode != 0 and b"exists" in done.stderr + done.stdout:
            # Made by an earlier test of this process: the test's password now.
            done = self.cli(["account", "recover", name], belay_password(password) + "\n")
        if done.returncode != 0:
            raise RuntimeError(f"belay account add {name}: {done.stderr.decode()}")
        self.passwords[name] = password
        # A recovery ends the account's password sign-ins, the control connection among them: the next one signs in.
        with self._controls_lock:
            self._controls.pop(name, None)

    def control(self, account: str) -> "_Control":
        with self._controls_lock:
            if account not in self._controls:
                self._controls[account] = _Control(self.listen_port, account, belay_password(self.passwords[account]))
            return self._controls[account]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self.log.close()
        subprocess.run(["psql", f"{DATABASE_SERVER}/postgres", "-qc", f'DROP DATABASE IF EXISTS "{self.database}"'],
                       check=False)
        if os.environ.get("BELAY_IRCTEST_KEEP") is None:
            shutil.rmtree(self.directory, ignore_errors=True)


class _Control:
    """A control connection of one account (no network bound): adds and removes its networks."""

    def __init__(self, port: int, account: str, password: str) -> None:
        self.lock = threading.Lock()
        self.buffer = b""
        self.seen: List[bytes] = []
        s = socket.create_connection(("127.0.0.1", port))
        s.settimeout(1.0)
        s.sendall(b"CAP LS 302\r\nCAP REQ :soju.im/bouncer-networks soju.im/bouncer-networks-notify\r\n"
                  + f"PASS :{account}:{password}\r\nNICK control\r\nUSER {account} 0 * :control\r\nCAP END\r\n".encode())
        self.socket = s
        self.read_until(lambda cmd, params: cmd == "001", 15.0)

    def read_until(self, match: Any, timeout: float) -> Tuple[str, List[str]]:
        s = self.socket
        deadline = time.time() + timeout
        while time.time() < deadline:
            while b"\r\n" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\r\n", 1)
                self.seen.append(raw)
                cmd, params = _command(raw.decode(errors="replace"))
                if cmd == "PING":
                    s.sendall(b"PONG :" + (params[0].encode() if params else b"") + b"\r\n")
                if match(cmd, params):
                    return (cmd, params)
            try:
                data = s.recv(65536)
            except socket.timeout:
                continue
            if not data:
                raise RuntimeError("Belay closed the control connection: " + repr(self.seen[-5:] + [self.buffer]))
            self.buffer += data
        raise TimeoutError("no answer on the control connection; last lines: " + repr(self.seen[-5:]))

    def add_network(self, upstream_port: int, nick: str, username: str, realname: str, name: str) -> int:
        """A new network on the upstream as `nick`, once it is connected; its id."""

        def esc(v: str) -> str:
            return v.replace("\\", "\\\\").replace(";", "\\:").replace(" ", "\\s")

        attrs = (f"name={esc(name)};host=127.0.0.1;port={upstream_port};tls=0;nickname={esc(nick)};"
                 f"username={esc(username)};realname={esc(realname)}")
        with self.lock:
            self.socket.sendall(f"BOUNCER ADDNETWORK {attrs}\r\n".encode())
            cmd, params = self.read_until(
                lambda c, p: (c == "BOUNCER" and p[:1] == ["ADDNETWORK"]) or (c == "FAIL" and p[:1] == ["BOUNCER"]),
                CONNECT_TIMEOUT)
            if cmd == "FAIL":
                raise RuntimeError("BOUNCER ADDNETWORK refused: " + " ".join(params))
            netid = params[1]
            deadline = time.time() + CONNECT_TIMEOUT
            while time.time() < deadline:
                self.socket.sendall(b"BOUNCER LISTNETWORKS\r\n")
                try:
                    self.read_until(lambda c, p: c == "BOUNCER" and p[:2] == ["NETWORK", netid]
                                    and "state=connected" in (p[2] if len(p) > 2 else ""), 1.0)
                    return int(netid)
                except TimeoutError:
                    pass
            raise RuntimeError(f"network {netid} ({nick}) did not connect")

    def remove_network(self, netid: int) -> None:
        with self.lock:
            try:
                self.socket.sendall(f"BOUNCER DELNETWORK {netid}\r\n".encode())
            except OSError:
                pass


def belay_password(password: str) -> str:
    """The Belay password of an irctest password: Belay wants at least 8 characters, irctest uses "sesame"."""
    return password + "-belay-irctest"


_belay: Optional[_Belay] = None
_tests_run = 0


def _the_belay() -> _Belay:
    global _belay
    if _belay is None:
        _belay = _Belay()
        atexit.register(_belay.stop)
    return _belay


class _Relay:
    """One irctest client's connection, relayed to Belay's listener with its sign-in added before NICK."""

    def __init__(self, controller: "BelayController", client: socket.socket) -> None:
        self.controller = controller
        self.client = client
        self.belay = socket.create_connection(("127.0.0.1", controller.belay.listen_port),
                                              source_address=(controller.source_address, 0))
        for s in (self.client, self.belay):
            s.setsockopt(socket.SOL_TCP, socket.TCP_NODELAY, 1)
        self.lock = threading.Lock()
        self.sasl_done = False
        self.sasl_account: Optional[str] = None
        self.sasl_data = False
        self.sasl_chunks: List[bytes] = []
        self.closed = False
        threading.Thread(target=self._upward, daemon=True).start()
        threading.Thread(target=self._downward, daemon=True).start()

    def close(self) -> None:
        self.closed = True
        for s in (self.client, self.belay):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _downward(self) -> None:
        pending = b""
        try:
            while True:
                data = self.belay.recv(65536)
                if not data:
                    break
                if not self.sasl_done:
                    pending += data
                    lines = pending.split(b"\r\n")
                    pending = lines.pop()
                    for line in lines:
                        cmd, params = _command(line.decode(errors="replace"))
                        if cmd == "903":
                            self.sasl_done = True
                        # The server's `AUTHENTICATE +` asks for the payload; a numeric ends the exchange.
                        if cmd == "AUTHENTICATE":
                            self.sasl_data = True
                        elif cmd in ("900", "903", "904", "905", "906", "907", "908"):
                            self.sasl_data = False
                self.client.sendall(data)
        except OSError:
            pass
        self.close()

    def _sasl(self, raw: bytes, params: List[str]) -> List[bytes]:
        """What to send for a client's AUTHENTICATE line: a PLAIN payload (whole, or its 400-byte chunks gathered)
        naming an account `registerUser` made goes with the password mapped to Belay's (belay_password), re-chunked;
        anything else as it came."""
        if not self.sasl_data or len(params) != 1 or params[0] == "*":
            self.sasl_chunks = []
            return [raw]
        if params[0] != "+":
            self.sasl_chunks.append(raw)
            if len(params[0]) == 400 and len(self.sasl_chunks) < SASL_CHUNKS_HELD:
                return []  # more follows
            if len(params[0]) == 400:
                # Longer than any payload a test maps: Belay itself must see it grow (its 10 KiB bound).
                chunks, self.sasl_chunks = self.sasl_chunks, []
                return chunks
        elif not self.sasl_chunks:
            return [raw]
        chunks, self.sasl_chunks = self.sasl_chunks, []
        payload = "".join(_command(c.decode(errors="replace"))[1][0] for c in chunks)
        try:
            authzid, authcid, password = base64.b64decode(payload, validate=True).decode().split("\0")
        except (ValueError, UnicodeDecodeError, IndexError):
            return chunks + ([raw] if params[0] == "+" else [])
        if authcid not in self.controller.belay.passwords:
            return chunks + ([raw] if params[0] == "+" else [])
        self.sasl_account = authcid
        mapped = base64.b64encode(f"{authzid}\0{authcid}\0{belay_password(password)}".encode()).decode()
        pieces = [mapped[i:i + 400] for i in range(0, len(mapped), 400)]
        if len(pieces[-1]) == 400:
            pieces.append("+")
        return [f"AUTHENTICATE {piece}".encode() for piece in pieces]

    def _upward(self) -> None:
        held: List[bytes] = []  # from the first NICK or USER on, until the sign-in is added
        nick: Optional[str] = None
        nick_at = 0.0
        user: Optional[List[str]] = None
        negotiating = False  # between the client's CAP LS/REQ and its CAP END, when Belay does not register it
        pending = b""
        self.client.settimeout(0.2)
        try:
            while True:
                try:
                    data = self.client.recv(65536)
                    if not data:
                        return self.close()
                    pending += data
                except socket.timeout:
                    pass
                lines = pending.split(b"\r\n")
                pending = lines.pop()
                for raw in lines:
                    cmd, params = _command(raw.decode(errors="replace"))
                    out = self._sasl(raw, params) if cmd == "AUTHENTICATE" else [raw]
                    if cmd == "NICK" and nick is None and params:
                        nick, nick_at = params[0], time.time()
                    if cmd == "USER" and user is None:
                        user = params
                    sub = params[0].upper() if cmd == "CAP" and params else ""
                    if sub in ("LS", "REQ"):
                        negotiating = True
                    if sub == "END":
                        negotiating = False
                        if self.sasl_data:
                            # Registration completed mid-exchange: Belay aborts it (906, sasl-3.1) and the client
                            # registers without SASL, so it gets the PASS a client without SASL gets.
                            self.sasl_data = False
                    # CAP and SASL go through at once (the sign-in to add depends on SASL's outcome, which a client
                    # sending NICK and USER first negotiates after them); so does all before NICK/USER.
                    if (nick is None and user is None) or cmd in ("AUTHENTICATE", "CAP"):
                        self.belay.sendall(b"".join(line + b"\r\n" for line in out))
                    else:
                        held.extend(out)
                if nick is not None and (user is not None or time.time() - nick_at > 1.0) and not self.sasl_data \
                        and not negotiating:
                    break
            # What the network is made with only; the client's own USER line still reaches Belay as it sent it.
            username = user[0] if user and re.fullmatch(r"[A-Za-z0-9._-]{1,20}", user[0]) else "irctest"
            realname = user[3] if user and len(user) > 3 and user[3].strip() != "" else "irctest"
            account = self.sasl_account if self.sasl_done else ACCOUNT
            if account is not None:
                try:
                    netid = self.controller.network_for(account, nick, username, realname)
                except Exception as e:  # the client is told why, as a server would end a connection
                    self.client.sendall(f"ERROR :irctest relay: {e}\r\n".encode())
                    return self.close()
                if account == ACCOUNT:
                    held.insert(0, f"PASS {ACCOUNT}/{netid}:{belay_password(PASSWORD)}".encode())
                else:
                    # SASL signed in already; USER names the network (docs/contract.md "The IRC client listener").
                    held = [_rename_user(line, f"{account}/{netid}") for line in held]
            self.belay.sendall(b"".join(line + b"\r\n" for line in held) + pending)
            self.client.settimeout(None)
            while True:
                data = self.client.recv(65536)
                if not data:
                    break
                self.belay.sendall(data)
        except OSError:
            pass
        self.close()


def _rename_user(raw: bytes, name: str) -> bytes:
    cmd, params = _command(raw.decode(errors="replace"))
    if cmd != "USER" or not params:
        return raw
    rest = raw.decode(errors="replace").split(" ", 2)
    return f"USER {name} {rest[2] if len(rest) > 2 else '0 * :irctest'}".encode()


class BelayController(BaseServerController, DirectoryBasedController):
    software_name = "Belay"
    supported_sasl_mechanisms: Set[str] = {"PLAIN"}
    supports_sts = False
    sync_sleep_time = SYNC_SLEEP
    # What Belay's listener itself offers (docs/contract.md "The IRC client listener"); irctest skips a test whose
    # capability is NAKed only when it is not listed here.
    capabilities = frozenset({
        Capabilities.BATCH, Capabilities.ECHO_MESSAGE, Capabilities.LABELED_RESPONSE, Capabilities.MESSAGE_TAGS,
        Capabilities.READ_MARKER, Capabilities.SERVER_TIME,
    })

    def __init__(self, test_config: TestCaseControllerConfig) -> None:
        super().__init__(test_config)
        self.listener: Optional[socket.socket] = None
        self.relays: List[_Relay] = []
        self.networks: List[Tuple[str, str, int]] = []
        self.networks_lock = threading.Lock()
        self.watchdog: Optional[threading.Timer] = None
        self.source_address = "127.0.0.1"
        self.upstream_port = 0
        self.counter = 0

    @property
    def belay(self) -> _Belay:
        return _the_belay()

    def run(self, hostname: str, port: int, *, password: Optional[str], ssl: bool, run_services: bool,
            faketime: Optional[str], websocket_hostname: Optional[str], websocket_port: Optional[int]) -> None:
        if websocket_hostname is not None or websocket_port is not None:
            raise NotImplementedByController("Websocket")
        if ssl:
            raise NotImplementedByController("TLS")
        if password is not None:
            raise NotImplementedByController("server password (the relay signs in with PASS)")
        assert self.proc is None
        self.hostname, self.port = hostname, port
        self.belay  # started once for the pytest process
        self.create_config()
        assert self.directory is not None
        self.directory.chmod(0o777)
        self.upstream_port = _free_port()
        # Each test's clients reach Belay from their own loopback address, so the sign-in limiter's count per address
        # (docs/contract.md "The IRC client listener") starts afresh with each test, as with a fresh server.
        global _tests_run
        _tests_run += 1
        self.source_address = f"127.{1 + _tests_run // 250 % 250}.{1 + _tests_run % 250}.1"
        command = upstream_server(UPSTREAM, self.directory, self.upstream_port)
        self.proc = self.execute(command, preexec_fn=_own_session_dying_with_parent)
        _wait_port(self.upstream_port, self.proc, UPSTREAM)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((hostname, port))
        self.listener.listen(64)
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()
        # irctest waits for a PONG without a deadline; a test stuck longer than this has its connections closed, so it
        # fails instead of hanging the run.
        self.watchdog = threading.Timer(TEST_DEADLINE, self._close_relays)
        self.watchdog.daemon = True
        self.watchdog.start()

    def _close_relays(self) -> None:
        for relay in list(self.relays):
            relay.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                self.relays.append(_Relay(self, client))
            except OSError:
                client.close()

    def network_for(self, account: str, nick: str, username: str, realname: str) -> int:
        """The network of `account` for `nick` in this test: made at its first connection, and the same one when a
        client with that nick connects again (a member coming back to the bouncer)."""
        with self.networks_lock:
            for known_account, known_nick, netid in self.networks:
                if known_account == account and known_nick.lower() == nick.lower():
                    return netid
            return self._add_network(account, nick, username, realname)

    def _add_network(self, account: str, nick: str, username: str, realname: str) -> int:
        self.counter += 1
        netid = self.belay.control(account).add_network(self.upstream_port, nick, username, realname,
                                                        f"c{self.counter}-{_safe(nick)}")
        self.networks.append((account, nick, netid))
        return netid

    def wait_for_port(self) -> None:
        # The relay listens before run() returns; irctest's own probe would cost a network.
        self.port_open = True

    def wait_for_services(self) -> None:
        pass

    def registerUser(self, case: Any, username: str, password: Optional[str] = None) -> None:
        # A Belay account; the relay maps its SASL PLAIN password to Belay's (belay_password) and binds the client
        # to a network of that account made for its nick.
        self.belay.add_account(username, password or PASSWORD)

    def kill(self) -> None:
        if self.watchdog is not None:
            self.watchdog.cancel()
            self.watchdog = None
        if self.listener is not None:
            self.listener.close()
            self.listener = None
        for relay in self.relays:
            relay.close()
        self.relays = []
        if _belay is not None:
            for account, _, netid in self.networks:
                _belay.control(account).remove_network(netid)
        self.networks = []
        super().kill()


def _safe(nick: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", nick)[:40] or "nick"


def get_irctest_controller_class() -> Type[BelayController]:
    return BelayController
