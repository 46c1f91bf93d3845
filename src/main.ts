/**
 * The composition root: the one place the layer graph is assembled and launched.
 * `belay serve` runs `serve`; tests build the same graph with `makeAppLayer`.
 *
 *   AppConfig ─▶ Database (PGlite or PostgreSQL, migrated)
 *             ─▶ SecretBox, TokenGenerator, Metrics
 *             ─▶ Accounts, Networks, ApiTokens, E2eKeys        (services/)
 *             ─▶ HttpRoutes ─▶ HttpServer, AdminServer         (http/, admin/)
 *
 * Shutdown (SIGTERM/SIGINT): runMain interrupts the launch fiber; layers close in
 * reverse order — listeners first, then services, the database last — and the
 * process exits 0.
 */
import { Data, Effect, FiberRef, HashSet, Layer, Logger } from "effect"
import { AdminServerLive } from "./admin/AdminServer.js"
import { healthRoutes } from "./http/HealthRoutes.js"
import { HttpRoutes, HttpServerLive } from "./http/HttpServer.js"
import { Accounts } from "./services/Accounts.js"
import { ApiTokens } from "./services/ApiTokens.js"
import { AppConfig, appSettings, type AppSettings, describeConfigError } from "./services/AppConfig.js"
import { DatabaseLive } from "./services/Database.js"
import { E2eKeys } from "./services/E2eKeys.js"
import { Metrics } from "./services/Metrics.js"
import { Networks } from "./services/Networks.js"
import { SecretBoxLive } from "./services/SecretBox.js"
import { TokenGeneratorLive } from "./services/Tokens.js"

export class StartupError extends Data.TaggedError("StartupError")<{ readonly message: string }> {}

/** Logging per LOG_LEVEL / LOG_FORMAT: JSON lines unless on a TTY. */
export const loggerLayer = (settings: AppSettings) =>
  Layer.mergeAll(
    // Replace the whole set: runMain may already have swapped the default logger for its own.
    Layer.fiberRefLocallyScopedWith(FiberRef.currentLoggers, () =>
      HashSet.make(settings.logFormat === "json" ? Logger.jsonLogger : Logger.prettyLogger())),
    Logger.minimumLogLevel(settings.logLevel)
  )

/** Every service of the product, over a migrated database. */
export const ServicesLive = Layer.mergeAll(ApiTokens.Default, E2eKeys.Default).pipe(
  Layer.provideMerge(Networks.Default),
  Layer.provideMerge(Accounts.Default),
  Layer.provideMerge(Layer.mergeAll(SecretBoxLive, TokenGeneratorLive, Metrics.Default)),
  Layer.provideMerge(DatabaseLive)
)

const RoutesLive = Layer.effect(
  HttpRoutes,
  Effect.gen(function*() {
    return [...(yield* healthRoutes)]
  })
)

/** The whole application for the given settings: HTTP and admin listeners over the services. */
export const makeAppLayer = (settings: AppSettings) =>
  Layer.mergeAll(HttpServerLive, AdminServerLive).pipe(
    Layer.provide(RoutesLive),
    Layer.provideMerge(ServicesLive),
    Layer.provideMerge(Layer.succeed(AppConfig, settings))
  )

export const serve = Effect.gen(function*() {
  const settings = yield* appSettings.pipe(Effect.mapError((e) => new StartupError({ message: describeConfigError(e) })))
  return yield* Layer.launch(makeAppLayer(settings)).pipe(
    Effect.provide(loggerLayer(settings)),
    Effect.catchAllDefect((defect) =>
      Effect.fail(new StartupError({ message: `start-up failed: ${defect instanceof Error ? defect.message : String(defect)}` }))
    ),
    Effect.mapError((e) =>
      e instanceof StartupError ? e : new StartupError({ message: `start-up failed: ${e instanceof Error ? e.message : String(e)}` })
    )
  )
})
