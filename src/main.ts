/**
 * The composition root: the one place the layer graph is assembled and launched.
 * `belay serve` runs `serve`; tests build the same graph with `makeAppLayer`.
 *
 *   AppConfig ─▶ Database (embedded or external PostgreSQL, migrated)
 *             ─▶ Services: each `Default` layer brings its own dependencies (services/)
 *             ─▶ NetworkSupervisor: one actor per network   (actors/, the NetworkControl port)
 *                or, with BELAY_CLUSTER_ADDRESS, this node of the cluster: the network entities it holds, the
 *                reconciler, the change relay and ClusterNetworkControl over @effect/cluster (cluster/)
 *             ─▶ HttpRoutes (health, /mcp, OAuth, the member's pages, /api/auth, /api/push, /api/buffers,
 *                /api/previews, /api/networks, /api/uploads and /uploads; CORS)
 *                + HttpUpgrades (the browser WebSocket /api/ws, http/ws/)
 *                ─▶ HttpServer, AdminServer  (http/, admin/)
 *             ─▶ IrcListener: IRC clients (listener/), over the services and the NetworkControl port
 *
 * Shutdown (SIGTERM/SIGINT): runMain interrupts the launch fiber; layers close in
 * reverse order — listeners first, then services, the database last — and the
 * process exits 0.
 */
import { Data, Effect, FiberRef, HashSet, Layer, Logger, Option } from "effect"
import { AdminServerLive } from "./admin/AdminServer.js"
import { IrcTransportLive } from "./actors/IrcTransport.js"
import type { NetworkControl } from "./actors/NetworkApi.js"
import { NetworkSupervisorLive } from "./actors/NetworkSupervisor.js"
import { bufferRoutes } from "./http/buffers/BufferRoutes.js"
import { mentionRoutes } from "./http/buffers/MentionRoutes.js"
import { healthRoutes } from "./http/HealthRoutes.js"
import { HttpRoutes, HttpServerLive } from "./http/HttpServer.js"
import { McpDispatcher } from "./http/mcp/McpDispatcher.js"
import { mcpRoutes } from "./http/mcp/McpRoute.js"
import { withCors } from "./http/Cors.js"
import { memberRoutes } from "./http/MemberRoutes.js"
import { networkRoutes } from "./http/networks/NetworkRoutes.js"
import { oauthRoutes } from "./http/oauth/OAuthRoutes.js"
import { pushRoutes } from "./http/push/PushRoutes.js"
import { uploadRoutes } from "./http/uploads/UploadRoutes.js"
import { previewRoutes } from "./http/previews/PreviewRoutes.js"
import { preferenceRoutes } from "./http/preferences/PreferenceRoutes.js"
import { SocketServerLive } from "./http/ws/SocketServer.js"
import { IrcListenerLive } from "./listener/IrcListener.js"
import { AccountLimits } from "./services/identity/AccountLimits.js"
import { Accounts } from "./services/identity/Accounts.js"
import { AccountDeletion } from "./services/memberdata/AccountDeletion.js"
import { AccountExport } from "./services/memberdata/AccountExport.js"
import { ApiTokens } from "./services/identity/ApiTokens.js"
import { AppConfig, appSettings, type AppSettings, describeConfigError } from "./services/AppConfig.js"
import { Authenticator } from "./services/identity/Authenticator.js"
import { BrowserSessions } from "./services/identity/BrowserSessions.js"
import { ClusterEvents } from "./services/nodes/ClusterEvents.js"
import { CredentialRevocations } from "./services/identity/CredentialRevocations.js"
import { CredentialUsage } from "./services/identity/CredentialUsage.js"
import { DatabaseLive } from "./services/storage/Database.js"
import { HeapTrimLive } from "./services/upkeep/HeapTrim.js"
import { disablePretenuring } from "./services/upkeep/Pretenuring.js"
import { E2eKeys } from "./services/networks/E2eKeys.js"
import { EventChannel } from "./services/storage/EventChannel.js"
import { MemberEvents } from "./services/events/MemberEvents.js"
import { HistoryRetention } from "./services/history/HistoryRetention.js"
import { MessageHistory } from "./services/history/MessageHistory.js"
import { MessageWriter } from "./services/history/MessageWriter.js"
import { Metrics } from "./services/upkeep/Metrics.js"
import { DestinationGuard } from "./services/egress/DestinationGuard.js"
import { IdentServer } from "./services/egress/IdentServer.js"
import { NetworkFeed } from "./services/events/NetworkFeed.js"
import { Networks } from "./services/networks/Networks.js"
import { NickNotes } from "./services/networks/NickNotes.js"
import { BufferPreferences } from "./services/preferences/BufferPreferences.js"
import { ClientPreferences } from "./services/preferences/ClientPreferences.js"
import { ClientDocuments } from "./services/oauth/ClientDocuments.js"
import { OAuthClients } from "./services/oauth/OAuthClients.js"
import { OAuthCodes } from "./services/oauth/OAuthCodes.js"
import { OAuthConsents } from "./services/oauth/OAuthConsents.js"
import { OAuthTokens } from "./services/identity/OAuthTokens.js"
import { PasskeyCeremonies } from "./services/identity/PasskeyCeremonies.js"
import { Passkeys } from "./services/identity/Passkeys.js"
import { ImageProxy } from "./services/previews/ImageProxy.js"
import { LinkPreviews } from "./services/previews/LinkPreviews.js"
import { PushSubscriptions } from "./services/push/PushSubscriptions.js"
import { ReadMarkers } from "./services/history/ReadMarkers.js"
import { RecentPages } from "./services/history/RecentPages.js"
import { RegistrationLimiter } from "./services/identity/RegistrationLimiter.js"
import { SecretBox } from "./services/crypto/SecretBox.js"
import { SignInLimiter } from "./services/identity/SignInLimiter.js"
import { WebPush } from "./services/push/WebPush.js"
import { Uploads } from "./services/uploads/Uploads.js"

export class StartupError extends Data.TaggedError("StartupError")<{ readonly message: string }> {}

/** Logging per LOG_LEVEL / LOG_FORMAT: JSON lines unless on a TTY. */
export const loggerLayer = (settings: AppSettings) =>
  Layer.mergeAll(
    // Replace the whole set: runMain may already have swapped the default logger for its own.
    Layer.fiberRefLocallyScopedWith(FiberRef.currentLoggers, () =>
      // `jsonLogger` only formats (a Logger<unknown, string>); `withConsoleLog` is what prints it.
      HashSet.make(settings.logFormat === "json" ? Logger.withConsoleLog(Logger.jsonLogger) : Logger.prettyLogger())),
    Logger.minimumLogLevel(settings.logLevel)
  )

/**
 * Every service the actors, routes and admin socket use, over the database and AppConfig
 * in context. Each `Default` layer provides its own dependencies, and a layer used twice in
 * one build is built once, so every service exists once however many others use it.
 */
export const Services = Layer.mergeAll(
  AccountLimits.Default,
  Accounts.Default,
  AccountDeletion.Default,
  AccountExport.Default,
  ApiTokens.Default,
  Authenticator.Default,
  BrowserSessions.Default,
  BufferPreferences.Default,
  ClientDocuments.Default,
  ClientPreferences.Default,
  ClusterEvents.Default,
  CredentialRevocations.Default,
  CredentialUsage.Default,
  DestinationGuard.Default,
  E2eKeys.Default,
  EventChannel.Default,
  MemberEvents.Default,
  HistoryRetention.Default,
  IdentServer.Default,
  ImageProxy.Default,
  LinkPreviews.Default,
  MessageHistory.Default,
  MessageWriter.Default,
  Metrics.Default,
  NetworkFeed.Default,
  Networks.Default,
  NickNotes.Default,
  OAuthClients.Default,
  OAuthCodes.Default,
  OAuthConsents.Default,
  OAuthTokens.Default,
  PasskeyCeremonies.Default,
  Passkeys.Default,
  PushSubscriptions.Default,
  ReadMarkers.Default,
  RecentPages.Default,
  RegistrationLimiter.Default,
  SecretBox.Default,
  SignInLimiter.Default,
  Uploads.Default,
  WebPush.Default
)

/** Every service of the product, over a migrated database. */
export const ServicesLive = Services.pipe(Layer.provideMerge(DatabaseLive))

const RoutesLive = Layer.effect(
  HttpRoutes,
  Effect.gen(function*() {
    const routes = [
      ...(yield* healthRoutes),
      ...(yield* mcpRoutes),
      ...(yield* oauthRoutes),
      ...(yield* memberRoutes),
      ...(yield* pushRoutes),
      ...(yield* uploadRoutes),
      ...(yield* previewRoutes),
      ...(yield* bufferRoutes),
      ...(yield* preferenceRoutes),
      ...(yield* mentionRoutes),
      ...(yield* networkRoutes)
    ]
    return withCors(yield* AppConfig, routes)
  })
).pipe(Layer.provide(McpDispatcher.Default))

/** The connections HttpServer hands over: the browser WebSocket. */
const UpgradesLive = SocketServerLive.pipe(Layer.provide(McpDispatcher.Default))

type ServicesOut = Layer.Layer.Success<typeof ServicesLive> | AppConfig

/**
 * The whole application for the given settings: HTTP and admin listeners over the
 * services. `actors` provides the network actors; tests may swap in a fake.
 */
export const makeAppLayer = <E>(settings: AppSettings, actors: Layer.Layer<NetworkControl, E, ServicesOut>) =>
  Layer.mergeAll(HttpServerLive, AdminServerLive, IrcListenerLive).pipe(
    Layer.provide(Layer.merge(RoutesLive, UpgradesLive)),
    Layer.provideMerge(actors),
    Layer.provideMerge(ServicesLive),
    Layer.provideMerge(Layer.succeed(AppConfig, settings))
  )

/**
 * The real network actors: one per stored network over irc-framework. Closed before the services it uses, so its
 * shutdown (QUIT everywhere, then flush the history, within 5 s) still has the database.
 */
export const NetworkActorsLive = NetworkSupervisorLive.pipe(Layer.provide(IrcTransportLive))

/**
 * This process as one node of the cluster at `address` (docs/decisions/several-nodes.md "Several nodes"). Built in this order and
 * closed in the reverse: the runner (after the secret key check; the shard locks are released last), this node's
 * actors, its direct command channel (listener and peers), then the entities, reconciler, change relay and the port. So on shutdown every entity of the node closes
 * (its network QUITs) before its shard lock is given up, and the history is flushed after them.
 *
 * Its modules are imported here, when a cluster address is set, and not when this module loads: @effect/cluster's
 * socket layer brings the undici HTTP client, evaluated at start though a single node never uses it
 * (bench/results/memory-breakdown.md "Idle on Node 24"; the server bundle evaluates a module reached only through
 * `import()` when that runs).
 */
export const clusterActors = (settings: AppSettings, address: { readonly host: string; readonly port: number }) =>
  Layer.unwrapEffect(Effect.promise(async () => {
    const [control, runner, listener, peers, relay, entity, reconciler, nodeActors] = await Promise.all([
      import("./cluster/ClusterNetworkControl.js"),
      import("./cluster/ClusterRunner.js"),
      import("./cluster/DirectListener.js"),
      import("./cluster/DirectPeers.js"),
      import("./cluster/NetworkChangeRelay.js"),
      import("./cluster/NetworkEntityLive.js"),
      import("./cluster/NetworkReconciler.js"),
      import("./cluster/NodeActors.js")
    ])
    return Layer.mergeAll(
      control.ClusterNetworkControlLive,
      entity.NetworkEntityLive,
      reconciler.NetworkReconcilerLive,
      relay.NetworkChangeRelayLive
    ).pipe(
      Layer.provide(Layer.mergeAll(listener.DirectListenerLive, peers.DirectPeersLive)),
      Layer.provide(nodeActors.NodeActorsLive),
      Layer.provide(runner.ClusterRunnerLive(settings, address)),
      Layer.provide(IrcTransportLive)
    )
  }))

/**
 * A start-up failure in one line, with the cause underneath when there is one: "PgClient: Failed to connect" alone
 * does not say that nothing listens where DATABASE_URL points (the driver's words, e.g. "connect ECONNREFUSED
 * 127.0.0.1:5432", name the address and never the password).
 */
const startupFailure = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error)
  const cause: unknown = "cause" in error ? error.cause : undefined
  return cause instanceof Error && cause.message !== "" && cause.message !== error.message
    ? `${error.message}: ${cause.message}`
    : error.message
}

export const serve = Effect.gen(function*() {
  const settings = yield* appSettings.pipe(Effect.mapError((e) => new StartupError({ message: describeConfigError(e) })))
  const actors = Option.match(settings.clusterAddress, {
    onNone: () => NetworkActorsLive,
    onSome: (address) => clusterActors(settings, address)
  })
  // Before the boot: a boot of thousands of networks is what would make V8 pretenure every request's fiber.
  disablePretenuring()
  return yield* Layer.launch(Layer.merge(makeAppLayer(settings, actors), HeapTrimLive)).pipe(
    Effect.provide(loggerLayer(settings)),
    Effect.catchAllDefect((defect) =>
      Effect.fail(new StartupError({ message: `start-up failed: ${startupFailure(defect)}` }))
    ),
    Effect.mapError((e) =>
      e instanceof StartupError ? e : new StartupError({ message: `start-up failed: ${startupFailure(e)}` })
    )
  )
})
