/**
 * Operational routes of docs/decisions/operations.md: `GET /healthz` (200 when the database answers,
 * else 503) and `GET /metrics` (Prometheus text). Stateless.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { Metrics } from "../services/upkeep/Metrics.js"
import { json, text, type Route } from "./HttpServer.js"

export const healthRoutes = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const metrics = yield* Metrics

  const healthz: Route = {
    method: "GET",
    path: "/healthz",
    handler: () =>
      sql`SELECT 1`.pipe(
        Effect.timeout("2 seconds"),
        Effect.as(json(200, { ok: true }, { "cache-control": "no-store" })),
        Effect.catchAllCause((cause) =>
          Effect.logWarning("health check failed", cause).pipe(
            Effect.as(json(503, { ok: false, error: "database unavailable" }, { "cache-control": "no-store" }))
          )
        )
      )
  }

  const metricsRoute: Route = {
    method: "GET",
    path: "/metrics",
    handler: () => Effect.map(metrics.render, (body) => text(200, body, "text/plain; version=0.0.4; charset=utf-8"))
  }

  return [healthz, metricsRoute] as ReadonlyArray<Route>
})
