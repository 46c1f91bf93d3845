/**
 * QuotaResponse: the one REST answer to a per-account limit reached (docs/contract.md "Account limits"): 409 with
 * `{error: "quota_exceeded", error_description, limit, max}`, never cached. The limit is named so that a client can
 * say which one without parsing the description. Pure; no state.
 */
import type { QuotaExceeded } from "../schema/ToolErrors.js"
import { type HttpResponse, json } from "./HttpServer.js"

const noStore: Readonly<Record<string, string>> = { "cache-control": "no-store", "pragma": "no-cache" }

export const quotaExceeded = (error: QuotaExceeded): HttpResponse =>
  json(409, { error: "quota_exceeded", error_description: error.message, limit: error.limit, max: error.max }, noStore)
