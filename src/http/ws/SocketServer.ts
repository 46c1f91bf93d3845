/**
 * SocketServer: the browser WebSocket `GET /api/ws` (docs/contract.md "The member's browser surface", WebSocket; the
 * interface, "Events" 2–3 and "Authentication" 2–3; docs/decisions/web.md "The browser WebSocket"). It owns the `ws`
 * server (RFC 6455), the registry of open sockets, and when each one must end.
 *
 * Before the upgrade, in order — a refusal is a plain HTTP answer and no WebSocket is ever opened:
 *   1. a usable Host (400);
 *   2. an `Origin` that is neither the service's own nor in BELAY_CORS_ORIGINS → 403 (a page of another origin
 *      must not drive the member's account, the interface "Authentication" 3);
 *   3. the credential (MemberCredential): a Bearer OAuth or password-sign-in token, else the session cookie; an API
 *      token, a dead token or none → 401 `{error: "invalid_token"}`;
 *   4. a cookie-carried socket needs `Origin` to be the service's own (it can write; docs/contract.md, Credentials) → 403;
 *   5. `since`, when given, a message id → else 400. (`first`, the tab's first view, is a preference and never
 *      refused: FirstView.ts.)
 *
 * Then each socket runs in SocketSession.ts. It ends:
 *   - with 4001 when the credential it was opened with ends — CredentialRevocations (token revoke, logout,
 *     Authorized apps, account recovery, session sign-out, in this process or another on the database) is followed
 *     by one fiber, so within the event's own delivery; when CredentialRevocations' LISTEN connection was lost and
 *     is back, every open socket's credential is read again and the dead ones close; a session's 30-day end is
 *     watched by the sweeper;
 *   - when its peer is silent: the sweeper (one fiber for every socket, every SWEEP_EVERY) pings a socket that
 *     was not pinged for PING_EVERY (30 s) and terminates one not heard from (any frame or pong) for SILENT_AFTER
 *     (60 s). The sweeper waits on a latch while no socket is open, so an idle service schedules nothing: a
 *     server with no tab open does no periodic work, and a test that moves the clock a day runs no sweeps;
 *   - with 1013 when it stops reading (SocketSession.ts);
 *   - with 1001 when Belay shuts down (`closeAll`, before the listener closes).
 *
 * Concurrency rule: the registry (Maps) is changed by ws callbacks and by the fibers of this module, one step at a
 * time; nothing blocks. Time is Effect's Clock (`unsafeCurrentTimeMillis` inside callbacks).
 */
import type * as Http from "node:http"
import type { Duplex } from "node:stream"
import { Duration, Effect, Either, Layer, Option, Queue, Runtime } from "effect"
import WebSocket, { WebSocketServer } from "ws"
import { NetworkControl } from "../../actors/NetworkApi.js"
import { SOCKET_PATH } from "../../schema/SocketFrame.js"
import { Accounts } from "../../services/identity/Accounts.js"
import { AppConfig } from "../../services/AppConfig.js"
import { Authenticator } from "../../services/identity/Authenticator.js"
import { BrowserSessions } from "../../services/identity/BrowserSessions.js"
import { CredentialRevocations, type CredentialRevoked } from "../../services/identity/CredentialRevocations.js"
import { MemberEvents } from "../../services/events/MemberEvents.js"
import { MessageHistory } from "../../services/history/MessageHistory.js"
import { Networks } from "../../services/networks/Networks.js"
import { NickNotes } from "../../services/networks/NickNotes.js"
import { OAuthTokens } from "../../services/identity/OAuthTokens.js"
import { ReadMarkers } from "../../services/history/ReadMarkers.js"
import { type Member, memberCredential } from "../auth/MemberCredential.js"
import { type HttpRequest, HttpUpgrades, json, refuseUpgrade } from "../HttpServer.js"
import { isAllowedOrigin, resolveIssuer } from "../Issuer.js"
import { McpDispatcher } from "../mcp/McpDispatcher.js"
import type { ToolCaller } from "../mcp/ToolHandlers.js"
import { foreignOrigin, noStore } from "../oauth/OAuthHttp.js"
import { type FirstWish, parseFirst } from "./FirstView.js"
import { CloseCode, MAX_BUFFERED, runSocket, type SocketServices } from "./SocketSession.js"

/** docs/contract.md: the server pings every 30 s and closes a peer silent for 60 s. */
export const PING_EVERY = Duration.seconds(30)
export const SILENT_AFTER = Duration.seconds(60)
/** How often the sweeper looks at every socket. */
const SWEEP_EVERY = Duration.seconds(1)
/** A frame larger than /mcp's body limit is refused (ws closes with 1009). */
const MAX_FRAME = 1024 * 1024
/** How long shutdown waits for the close handshakes before cutting the sockets. */
const CLOSE_GRACE = Duration.seconds(1)

const PING_MS = Duration.toMillis(PING_EVERY)
const SILENT_MS = Duration.toMillis(SILENT_AFTER)

interface OpenSocket {
  readonly ws: WebSocket
  /** What it was opened with: an `oauth_tokens` row or a `browser_sessions` row. */
  readonly credential: { readonly kind: "oauth" | "session"; readonly id: number }
  readonly credentialKey: string
  /** A session's absolute end (Unix ms); null for a token, which ends only when revoked. */
  readonly expiresAt: number | null
  lastHeard: number
  lastPing: number
}

const keyOf = (credential: CredentialRevoked["credential"], tokenId: number) => `${credential}:${tokenId}`

const badRequest = (description: string) => json(400, { error: "invalid_request", error_description: description }, noStore)

/** `?since=`: a message id (a non-negative integer), when given. */
const parseSince = (request: HttpRequest): Either.Either<Option.Option<number>, string> => {
  const raw = request.query.get("since")
  if (raw === null) return Either.right(Option.none())
  if (!/^\d{1,15}$/.test(raw)) return Either.left("since must be a message id")
  return Either.right(Option.some(Number(raw)))
}

export const make = Effect.gen(function*() {
  const config = yield* AppConfig
  const authenticator = yield* Authenticator
  const sessions = yield* BrowserSessions
  const revocations = yield* CredentialRevocations
  const oauthTokens = yield* OAuthTokens
  const accounts = yield* Accounts
  const services: SocketServices = {
    accounts,
    events: yield* MemberEvents,
    history: yield* MessageHistory,
    notes: yield* NickNotes,
    networks: yield* Networks,
    control: yield* NetworkControl,
    dispatcher: yield* McpDispatcher,
    markers: yield* ReadMarkers
  }
  const clock = yield* Effect.clock
  const runtime = yield* Effect.runtime<never>()
  const runFork = Runtime.runFork(runtime)

  const wss = new WebSocketServer({ noServer: true, clientTracking: false, perMessageDeflate: false, maxPayload: MAX_FRAME })
  const open = new Set<OpenSocket>()
  const byCredential = new Map<string, Set<OpenSocket>>()
  /** Open exactly while `open` is not empty; the sweeper waits on it. */
  const anyOpen = yield* Effect.makeLatch(false)

  const register = (socket: OpenSocket) => {
    open.add(socket)
    anyOpen.unsafeOpen()
    let set = byCredential.get(socket.credentialKey)
    if (set === undefined) byCredential.set(socket.credentialKey, (set = new Set()))
    set.add(socket)
  }
  const unregister = (socket: OpenSocket) => {
    open.delete(socket)
    if (open.size === 0) anyOpen.unsafeClose()
    const set = byCredential.get(socket.credentialKey)
    set?.delete(socket)
    if (set?.size === 0) byCredential.delete(socket.credentialKey)
  }

  const close = (ws: WebSocket, code: number, reason: string) => {
    if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close(code, reason)
  }

  /** The caller of a call, judged again now: the bearer through the Authenticator, the session by its account. */
  const callerOf = (member: Member, authorization: string | undefined): Effect.Effect<Option.Option<ToolCaller>> => {
    if (member._tag === "Bearer") return authenticator.authenticate(authorization)
    return Effect.map(accounts.findById(member.accountId), Option.map((account): ToolCaller => {
      const paused = account.status === "paused"
      return { accountId: account.id, grantedScope: "read-write", paused, scope: paused ? "read" : "read-write" }
    }))
  }

  const start = (
    ws: WebSocket,
    member: Member,
    authorization: string | undefined,
    since: Option.Option<number>,
    first: Option.Option<FirstWish>
  ) => {
    const now = clock.unsafeCurrentTimeMillis()
    const credential = member._tag === "Bearer"
      ? { kind: "oauth" as const, id: member.principal.tokenId }
      : { kind: "session" as const, id: member.session.session.sessionId }
    const socket: OpenSocket = {
      ws,
      credential,
      credentialKey: keyOf(credential.kind, credential.id),
      expiresAt: member._tag === "Session" ? member.session.session.expiresAt.getTime() : null,
      lastHeard: now,
      lastPing: now
    }
    register(socket)
    const heard = () => {
      socket.lastHeard = clock.unsafeCurrentTimeMillis()
    }
    ws.on("message", heard)
    ws.on("pong", heard)
    ws.on("error", () => ws.terminate())
    const fiber = runFork(
      runSocket(services, ws, {
        accountId: member.accountId,
        since,
        first,
        caller: callerOf(member, authorization),
        close: (code, reason) => close(ws, code, reason)
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.zipRight(Effect.logError("socket failed", cause), Effect.sync(() => ws.terminate()))
        ),
        Effect.annotateLogs({ accountId: member.accountId })
      )
    )
    ws.on("close", () => {
      unregister(socket)
      fiber.unsafeInterruptAsFork(fiber.id())
    })
  }

  const handle = (request: HttpRequest, raw: Http.IncomingMessage, socket: Duplex, head: Buffer) =>
    Effect.gen(function*() {
      const issuer = resolveIssuer(request, config)
      if (Either.isLeft(issuer)) return refuseUpgrade(socket, badRequest("the Host header of this request is not valid"))
      const origin = request.header("origin")
      if (origin !== undefined && !isAllowedOrigin(config, issuer.right, origin)) return refuseUpgrade(socket, foreignOrigin())
      const member = yield* memberCredential({ authenticator, sessions, accounts }, request, issuer.right)
      if (Either.isLeft(member)) return refuseUpgrade(socket, member.left)
      if (member.right._tag === "Session" && origin !== issuer.right) return refuseUpgrade(socket, foreignOrigin())
      const since = parseSince(request)
      if (Either.isLeft(since)) return refuseUpgrade(socket, badRequest(since.left))
      const admitted = member.right
      const authorization = request.header("authorization")
      const first = parseFirst(request.query.get("first"))
      wss.handleUpgrade(raw, socket, head, (ws) => start(ws, admitted, authorization, since.right, first))
    })

  // Revocations: every socket opened with the credential closes at once.
  const revoked = yield* revocations.subscribe
  yield* Queue.take(revoked).pipe(
    Effect.flatMap((event) =>
      Effect.sync(() => {
        const set = byCredential.get(keyOf(event.credential === "api-token" ? "api-token" : event.credential, event.tokenId))
        if (set === undefined) return
        for (const socket of set) close(socket.ws, CloseCode.revoked, "credential revoked")
      })
    ),
    Effect.forever,
    Effect.forkScoped
  )

  // LISTEN was lost and is back: a credential revoked by another process meanwhile was never heard of.
  const recheck = Effect.gen(function*() {
    const sockets = [...open]
    const idsOf = (kind: OpenSocket["credential"]["kind"]) => [...new Set(sockets.filter((s) => s.credential.kind === kind).map((s) => s.credential.id))]
    const liveTokens = yield* oauthTokens.liveAmong(idsOf("oauth"))
    const liveSessions = yield* sessions.liveAmong(idsOf("session"))
    for (const socket of sockets) {
      const live = socket.credential.kind === "oauth" ? liveTokens : liveSessions
      if (!live.has(socket.credential.id)) close(socket.ws, CloseCode.revoked, "credential revoked")
    }
  })
  const resyncs = yield* revocations.resyncs
  yield* Queue.take(resyncs).pipe(
    Effect.zipRight(Queue.takeAll(resyncs)),
    Effect.zipRight(recheck),
    Effect.catchAllCause((cause) => Effect.logWarning("open sockets' credentials not checked again", cause)),
    Effect.forever,
    Effect.forkScoped
  )

  const sweep = Effect.sync(() => {
    const now = clock.unsafeCurrentTimeMillis()
    for (const socket of open) {
      const ws = socket.ws
      if (ws.readyState !== WebSocket.OPEN) continue
      if (socket.expiresAt !== null && now >= socket.expiresAt) close(ws, CloseCode.revoked, "the session ended")
      else if (now - socket.lastHeard >= SILENT_MS) ws.terminate()
      else if (ws.bufferedAmount > MAX_BUFFERED) close(ws, CloseCode.tryAgainLater, "the client is not reading")
      else if (now - socket.lastPing >= PING_MS) {
        socket.lastPing = now
        ws.ping()
      }
    }
  })
  yield* anyOpen.await.pipe(Effect.zipRight(Effect.sleep(SWEEP_EVERY)), Effect.zipRight(sweep), Effect.forever, Effect.forkScoped)

  const closeAll = Effect.gen(function*() {
    const sockets = [...open]
    if (sockets.length === 0) return
    const allClosed = Effect.async<void>((resume) => {
      let left = sockets.length
      const onClose = () => {
        if (--left === 0) resume(Effect.void)
      }
      for (const socket of sockets) {
        if (socket.ws.readyState === WebSocket.CLOSED) onClose()
        else socket.ws.once("close", onClose)
      }
    })
    for (const socket of sockets) close(socket.ws, CloseCode.goingAway, "Belay is shutting down")
    yield* Effect.timeoutOption(allClosed, CLOSE_GRACE).pipe(Effect.withClock(clock))
    for (const socket of sockets) socket.ws.terminate()
  })
  yield* Effect.addFinalizer(() => Effect.zipRight(closeAll, Effect.sync(() => wss.close())))

  return {
    routes: [{ path: SOCKET_PATH, handle }],
    closeAll,
    /** Open sockets, for the benchmark and tests. */
    openSockets: () => open.size
  }
})

/** The WebSocket route for HttpServerLive. */
export const SocketServerLive = Layer.scoped(HttpUpgrades, make)
