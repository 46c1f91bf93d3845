/**
 * IrcListener: the IRC client listener (docs/contract.md "The IRC client listener"; docs/architecture.md). When
 * BELAY_IRC_LISTEN is set it owns a TCP or TLS server (TLS 1.2 at least), every client session on it
 * (DownstreamSession.ts, one fiber each in a FiberSet of the listener's scope) and the hub that routes live events to
 * them (SessionHub.ts). Its inputs are service-level sources only, so they reach it wherever a network's actor runs:
 * stored messages from MessageWriter.stored (as the browser's WebSocket gets them), upstream lines and statuses from
 * NetworkFeed, read markers from ReadMarkers.changes, networks from Networks.changes, credentials ended and accounts
 * changed from CredentialRevocations; and the network actors are reached only through the NetworkControl port.
 *
 * Concurrency rule: the server's callbacks only fork a session fiber through the listener's runtime; one fiber per
 * source routes its events to the sessions (SessionHub.ts, never waiting), stored messages and feed lines through
 * LiveOrder (the server's order), whose timer fiber runs only while it holds a line. Closing the layer closes the server and
 * interrupts every session.
 */
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Tls from "node:tls"
import { Context, Duration, Effect, FiberSet, Layer, Option, PubSub, Queue, Runtime, type Scope } from "effect"
import { NetworkControl } from "../actors/NetworkApi.js"
import { rateLimitKey } from "../net/RateLimitKey.js"
import { Accounts } from "../services/identity/Accounts.js"
import { ApiTokens } from "../services/identity/ApiTokens.js"
import { AppConfig } from "../services/AppConfig.js"
import { filehostUrl } from "../services/uploads/Uploads.js"
import { Authenticator } from "../services/identity/Authenticator.js"
import { ClientDeliveries } from "../services/history/ClientDeliveries.js"
import { CredentialRevocations } from "../services/identity/CredentialRevocations.js"
import { MessageHistory } from "../services/history/MessageHistory.js"
import { MessageWriter } from "../services/history/MessageWriter.js"
import { isFeedLine, NetworkFeed } from "../services/events/NetworkFeed.js"
import { Networks } from "../services/networks/Networks.js"
import { OAuthTokens } from "../services/identity/OAuthTokens.js"
import { ReadMarkers } from "../services/history/ReadMarkers.js"
import { BufferPreferences } from "../services/preferences/BufferPreferences.js"
import { SignInLimiter } from "../services/identity/SignInLimiter.js"
import { DestinationGuard } from "../services/egress/DestinationGuard.js"
import { PushSubscriptions } from "../services/push/PushSubscriptions.js"
import { WebPush } from "../services/push/WebPush.js"
import { runSession } from "./DownstreamSession.js"
import type { ListenerDeps } from "./ListenerDeps.js"
import { HOLD_LIMIT, makeLiveOrder } from "./LiveOrder.js"
import { arrivesStored } from "./MessageLines.js"
import { makeClientTagMemo } from "./ClientTagMemo.js"
import { makeUpstreamLabels } from "./UpstreamLabels.js"
import { makeSessionHub, type SessionHandle } from "./SessionHub.js"

/** Where the listener listens; None when BELAY_IRC_LISTEN is unset. */
export class IrcListenerAddress extends Context.Tag("belay/IrcListenerAddress")<
  IrcListenerAddress,
  Option.Option<{ readonly host: string; readonly port: number; readonly tls: boolean }>
>() {}

/**
 * The address key of the per-address limits: the web's own (net/RateLimitKey.ts: an IPv6 client shares its /56), so
 * that the sign-in limiter counts an address once whichever way it comes in.
 */
export const addressKey = (address: string): string => rateLimitKey(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] ?? address)

const make = Effect.gen(function*() {
  const settings = yield* AppConfig
  if (Option.isNone(settings.ircListen)) return Option.none()
  const { host, port } = settings.ircListen.value
  const control = yield* NetworkControl
  const networks = yield* Networks
  const feed = yield* NetworkFeed
  const writer = yield* MessageWriter
  const markers = yield* ReadMarkers
  const preferences = yield* BufferPreferences
  const runtime = yield* Effect.runtime<never>()
  const sessions = yield* FiberSet.make()
  const hub = makeSessionHub({
    control,
    networks,
    fork: (effect) => {
      Runtime.runFork(runtime)(FiberSet.run(sessions, effect))
    },
    // In a cluster, what brings another node's lines of this network here (ClusterEvents).
    bound: (networkId, first) => feed.bind(networkId, first ? 1 : -1),
    arrived: () => order.arrived()
  })
  const labels = makeUpstreamLabels()
  const deps: ListenerDeps = {
    control,
    networks,
    hub,
    history: yield* MessageHistory,
    markers,
    preferences,
    deliveries: yield* ClientDeliveries,
    accounts: yield* Accounts,
    authenticator: yield* Authenticator,
    apiTokens: yield* ApiTokens,
    oauthTokens: yield* OAuthTokens,
    limiter: yield* SignInLimiter,
    labels,
    clientTags: makeClientTagMemo(),
    filehost: Option.getOrUndefined(filehostUrl(settings.publicBaseUrl)),
    push: {
      subscriptions: yield* PushSubscriptions,
      publicKey: (yield* WebPush).publicKey,
      guard: yield* DestinationGuard,
      insecureEndpoints: settings.pushInsecureEndpoints
    }
  }
  const revocations = yield* CredentialRevocations

  // Sources, subscribed before the server accepts anyone.
  const follow = <A>(subscription: Effect.Effect<Queue.Dequeue<A>, never, Scope.Scope>, route: (a: A) => Effect.Effect<void>) =>
    Effect.flatMap(subscription, (queue) =>
      Queue.take(queue).pipe(
        Effect.flatMap(route),
        Effect.catchAllCause((cause) => Effect.logWarning("IRC listener: an event was not delivered", cause)),
        Effect.forever,
        Effect.forkScoped
      ))
  const toAll = (set: ReadonlySet<SessionHandle>, event: Parameters<SessionHandle["offer"]>[0]) => {
    for (const s of set) s.offer(event)
  }
  yield* Effect.acquireRelease(Effect.sync(() => feed.follow(1)), () => Effect.sync(() => feed.follow(-1)))
  // Stored messages and the feed's other lines, put back in the order the server sent them (LiveOrder.ts).
  const holding = yield* Effect.makeLatch(false)
  const clock = yield* Effect.clock
  const order = makeLiveOrder({
    rows: (networkId, rows) => toAll(hub.ofNetwork(networkId), { _tag: "Stored", rows }),
    // To the sessions bound before the line reached the listener (SessionHub `boundAt`): held lines go to no later one.
    line: (line, arrival) => {
      const reply = labels.route(line)
      for (const s of hub.ofNetwork(line.networkId)) {
        if (!hub.boundBefore(s, arrival)) continue
        if (reply === undefined) s.offer({ _tag: "Line", line })
        else if (!reply.originOnly || s.id === reply.session) s.offer({ _tag: "Line", line, reply })
      }
    },
    holding: (held) => (held ? holding.unsafeOpen() : holding.unsafeClose())
  }, () => clock.unsafeCurrentTimeMillis())
  yield* holding.await.pipe(
    Effect.zipRight(Effect.sleep(Duration.millis(Duration.toMillis(HOLD_LIMIT) / 4))),
    Effect.zipRight(Effect.sync(() => order.releaseOverdue())),
    Effect.forever,
    Effect.forkScoped
  )
  yield* follow(PubSub.subscribe(feed.lines), (event) =>
    Effect.sync(() => {
      if (!isFeedLine(event)) order.mark(event)
      else if (!arrivesStored(event.line)) order.line(event)
    }))
  yield* follow(PubSub.subscribe(writer.stored), (rows) => Effect.sync(() => order.stored(rows, writer.sequenceOf(rows))))
  yield* follow(PubSub.subscribe(feed.statuses), (status) =>
    Effect.sync(() => {
      if (status.status.state !== "connected") labels.forgetNetwork(status.status.networkId)
      toAll(hub.ofAccount(status.accountId), { _tag: "Status", status })
    }))
  yield* follow(PubSub.subscribe(markers.changes), (marker) => Effect.sync(() => toAll(hub.ofNetwork(marker.networkId), { _tag: "Marker", marker })))
  // draft/metadata-2 (Metadata.ts): a buffer's choice changed, here, in the browser or on another node.
  yield* follow(PubSub.subscribe(preferences.changes), (change) =>
    Effect.sync(() => toAll(hub.ofNetwork(change.networkId), { _tag: "Preference", change })))
  yield* follow(PubSub.subscribe(networks.changes), (change) =>
    Effect.gen(function*() {
      const accountId = change._tag === "Removed"
        ? Option.some(change.accountId)
        : Option.map(yield* networks.config(change.networkId), (c) => c.accountId)
      if (Option.isSome(accountId)) {
        toAll(hub.ofAccount(accountId.value), { _tag: "NetworkChange", change, accountId: accountId.value })
      }
    }))

  // Credentials (CredentialCheck.ts): a revocation to the account's sessions (each knows what it signed in with), an
  // account's change to its sessions, and after a lost LISTEN every session judges its credential again.
  yield* follow(revocations.subscribe, (revoked) =>
    Effect.sync(() => toAll(hub.ofAccount(revoked.accountId), { _tag: "Credential", event: { _tag: "Revoked", revoked } })))
  yield* follow(revocations.accountChanges, (accountId) =>
    Effect.sync(() => toAll(hub.ofAccount(accountId), { _tag: "Credential", event: { _tag: "AccountChanged" } })))
  yield* follow(revocations.resyncs, () =>
    Effect.sync(() => toAll(new Set(hub.all()), { _tag: "Credential", event: { _tag: "Recheck" } })))

  const tls = Option.map(settings.ircTls, (files) => ({
    cert: Fs.readFileSync(files.certFile),
    key: Fs.readFileSync(files.keyFile)
  }))
  let nextId = 0
  const open = new Set<Net.Socket>()
  const accept = (socket: Net.Socket) => {
    const id = ++nextId
    open.add(socket)
    socket.once("close", () => open.delete(socket))
    const ipKey = addressKey(socket.remoteAddress ?? "unknown")
    Runtime.runFork(runtime)(FiberSet.run(sessions, runSession(deps, socket, id, ipKey)))
  }
  const server: Net.Server = Option.match(tls, {
    onNone: () => Net.createServer({ noDelay: true }, accept),
    onSome: ({ cert, key }) => Tls.createServer({ cert, key, minVersion: "TLSv1.2" }, accept)
  })
  // A TLS handshake that fails is the client's problem, not the listener's.
  server.on("tlsClientError", () => {})
  const bound = yield* Effect.acquireRelease(
    Effect.async<{ readonly port: number }, Error>((resume) => {
      server.once("error", (error) => resume(Effect.fail(error)))
      server.listen(port, host, () => {
        const address = server.address()
        resume(Effect.succeed({ port: typeof address === "object" && address !== null ? address.port : port }))
      })
    }).pipe(Effect.orDie),
    // Sessions first (each says goodbye), then every socket still open, so that closing the server never waits.
    () =>
      Effect.zipRight(
        FiberSet.clear(sessions),
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          for (const socket of open) socket.destroy()
        })
      )
  )
  const address = { host, port: bound.port, tls: Option.isSome(tls) }
  yield* Effect.logInfo(`IRC listener on ${host.includes(":") ? `[${host}]` : host}:${bound.port} (${address.tls ? "TLS" : "plaintext"})`)
    .pipe(Effect.annotateLogs({ ircListen: `${host}:${bound.port}`, tls: address.tls }))
  return Option.some(address)
})

/** The listener over the services and the network actors' port; nothing listens when BELAY_IRC_LISTEN is unset. */
export const IrcListenerLive = Layer.scoped(IrcListenerAddress, make).pipe(Layer.provide(ClientDeliveries.Default))
