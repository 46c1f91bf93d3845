/**
 * The composition root: the one place the layer graph is assembled and launched.
 * `belay serve` runs `serve`; tests build the same graph with `makeAppLayer`.
 *
 *   AppConfig ─▶ Database (embedded or external PostgreSQL, migrated)
 *             ─▶ SecretBox, TokenGenerator, Metrics, CredentialCache
 *             ─▶ Accounts ─▶ Networks ─▶ ApiTokens, MessageStore, BrowserEvents
 *             ─▶ Authenticator, E2eKeys, NickNotes, OAuth services      (services/)
 *             ─▶ NetworkSupervisor: one actor per network   (actors/, the NetworkControl port)
 *             ─▶ HttpRoutes (health, /mcp, OAuth) ─▶ HttpServer, AdminServer  (http/, admin/)
 *
 * Shutdown (SIGTERM/SIGINT): runMain interrupts the launch fiber; layers close in
 * reverse order — listeners first, then services, the database last — and the
 * process exits 0.
 */
import { Data, Effect, FiberRef, HashSet, Layer, Logger } from "effect"
import { AdminServerLive } from "./admin/AdminServer.js"
import { IrcTransportLive } from "./actors/IrcTransport.js"
import type { NetworkControl } from "./actors/NetworkApi.js"
import { NetworkSupervisorLive } from "./actors/NetworkSupervisor.js"
import { healthRoutes } from "./http/HealthRoutes.js"
import { HttpRoutes, HttpServerLive } from "./http/HttpServer.js"
import { McpDispatcher } from "./http/mcp/McpDispatcher.js"
import { mcpRoutes } from "./http/mcp/McpRoute.js"
import { oauthRoutes } from "./http/oauth/OAuthRoutes.js"
import { Accounts } from "./services/Accounts.js"
import { ApiTokens } from "./services/ApiTokens.js"
import { AppConfig, appSettings, type AppSettings, describeConfigError } from "./services/AppConfig.js"
import { Authenticator } from "./services/Authenticator.js"
import { BrowserEvents } from "./services/BrowserEvents.js"
import { BrowserSessions } from "./services/BrowserSessions.js"
import { CredentialCache } from "./services/CredentialCache.js"
import { DatabaseLive } from "./services/Database.js"
import { E2eKeys } from "./services/E2eKeys.js"
import { MessageStoreLive } from "./services/MessageStore.js"
import { Metrics } from "./services/Metrics.js"
import { Networks } from "./services/Networks.js"
import { NickNotes } from "./services/NickNotes.js"
import { OAuthClients } from "./services/OAuthClients.js"
import { OAuthCodes } from "./services/OAuthCodes.js"
import { OAuthConsents } from "./services/OAuthConsents.js"
import { OAuthTokens } from "./services/OAuthTokens.js"
import { RegistrationLimiter } from "./services/RegistrationLimiter.js"
import { SecretBoxLive } from "./services/SecretBox.js"
import { TokenGeneratorLive } from "./services/Tokens.js"

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

/** The OAuth authorization server's state: apps, consents, codes, tokens, sessions, limits. */
const OAuthServicesLive = Layer.mergeAll(
  OAuthClients.Default,
  OAuthConsents.Default,
  OAuthCodes.Default,
  BrowserSessions.Default,
  RegistrationLimiter.Default
).pipe(Layer.provideMerge(OAuthTokens.Default))

/** Every service of the product, over a migrated database. */
export const ServicesLive = Layer.mergeAll(Authenticator.Default, E2eKeys.Default, NickNotes.Default, OAuthServicesLive).pipe(
  Layer.provideMerge(Layer.mergeAll(ApiTokens.Default, BrowserEvents.Default, MessageStoreLive)),
  Layer.provideMerge(Networks.Default),
  Layer.provideMerge(Accounts.Default),
  Layer.provideMerge(Layer.mergeAll(SecretBoxLive, TokenGeneratorLive, Metrics.Default, CredentialCache.Default)),
  Layer.provideMerge(DatabaseLive)
)

const RoutesLive = Layer.effect(
  HttpRoutes,
  Effect.gen(function*() {
    return [...(yield* healthRoutes), ...(yield* mcpRoutes), ...(yield* oauthRoutes)]
  })
).pipe(Layer.provide(McpDispatcher.Default))

type ServicesOut = Layer.Layer.Success<typeof ServicesLive> | AppConfig

/**
 * The whole application for the given settings: HTTP and admin listeners over the
 * services. `actors` provides the network actors; tests may swap in a fake.
 */
export const makeAppLayer = <E>(settings: AppSettings, actors: Layer.Layer<NetworkControl, E, ServicesOut>) =>
  Layer.mergeAll(HttpServerLive, AdminServerLive).pipe(
    Layer.provide(RoutesLive),
    Layer.provideMerge(actors),
    Layer.provideMerge(ServicesLive),
    Layer.provideMerge(Layer.succeed(AppConfig, settings))
  )

/**
 * The real network actors: one per stored network over irc-framework. Closed before the services it uses, so its
 * shutdown (QUIT everywhere, then flush the history, within 5 s) still has the database.
 */
export const NetworkActorsLive = NetworkSupervisorLive.pipe(Layer.provide(IrcTransportLive))

export const serve = Effect.gen(function*() {
  const settings = yield* appSettings.pipe(Effect.mapError((e) => new StartupError({ message: describeConfigError(e) })))
  return yield* Layer.launch(makeAppLayer(settings, NetworkActorsLive)).pipe(
    Effect.provide(loggerLayer(settings)),
    Effect.catchAllDefect((defect) =>
      Effect.fail(new StartupError({ message: `start-up failed: ${defect instanceof Error ? defect.message : String(defect)}` }))
    ),
    Effect.mapError((e) =>
      e instanceof StartupError ? e : new StartupError({ message: `start-up failed: ${e instanceof Error ? e.message : String(e)}` })
    )
  )
})
