/**
 * The arguments and the printed answer of `belay account limits NAME [--networks N] [--channels N] [--apps N]
 * [--push-subscriptions N] [--passkeys N] [--sessions N] [--uploads MIB]` and `belay account show NAME` (docs/contract.md "Account
 * limits"). A value is a whole number, `unlimited` or `default`; the server checks each against its own bounds again.
 * Pure; no state.
 */
import { Either, ParseResult, Schema } from "effect"
import { AdminAccountShow, type AdminRequest, LimitChanges } from "../schema/Admin.js"
import { LIMIT_NAMES } from "../schema/ToolErrors.js"

/** The flags of `account limits`, one per limit, named as the limits are. */
export const LIMIT_FLAGS: ReadonlyArray<string> = LIMIT_NAMES

/** `flags` (the parsed --name value pairs) as the request; a message for a bad value or no limit given. */
export const limitsRequest = (
  name: string,
  flags: ReadonlyMap<string, string | true>
): { readonly request: AdminRequest } | { readonly usage: string } => {
  const changes: Record<string, number | "unlimited" | "default"> = {}
  for (const [flag, value] of flags) {
    if (flag === "json") continue
    if (!LIMIT_FLAGS.includes(flag)) return { usage: `unknown option --${flag}; the limits are --${LIMIT_FLAGS.join(", --")}` }
    if (typeof value !== "string") return { usage: `--${flag} needs a value` }
    const v = value.trim().toLowerCase()
    if (v === "unlimited" || v === "default") changes[flag] = v
    else if (/^\d{1,7}$/.test(v)) changes[flag] = Number(v)
    else return { usage: `--${flag} must be a whole number, unlimited or default, got ${JSON.stringify(value)}` }
  }
  if (Object.keys(changes).length === 0) return { usage: `give at least one limit: --${LIMIT_FLAGS.join(" N, --")} N` }
  // The request's own Schema gives the type, and refuses here a count past its bounds (the server checks again).
  const limits = Schema.decodeUnknownEither(LimitChanges)(changes)
  if (Either.isLeft(limits)) {
    const flag = String(ParseResult.ArrayFormatter.formatErrorSync(limits.left)[0]?.path[0] ?? "")
    return { usage: `--${flag} must be a whole number from 0 to 1000000, unlimited or default, got ${flags.get(flag)}` }
  }
  return { request: { _tag: "AccountLimits", name, limits: limits.right } }
}

/** One line per limit: name, what is used of it, where it comes from; then the channels per network. */
export const showLines = (result: unknown): string => {
  const shown = Schema.decodeUnknownSync(AdminAccountShow)(result)
  const lines = [`account ${shown.name} (${shown.status})`]
  for (const limit of LIMIT_NAMES) {
    const l = shown.limits[limit]
    const scope = limit === "channels" ? " (most on one network)" : limit === "uploads" ? " MiB" : ""
    lines.push(`${limit}\t${l.used} of ${l.max === null ? "unlimited" : l.max}${scope}\t${l.source}`)
  }
  for (const n of shown.channels) lines.push(`  network ${n.networkId} ${n.name}\t${n.channels} channels`)
  lines.push(`history kept\t${shown.historyRetentionDays === null ? "everything" : `${shown.historyRetentionDays} days`}`)
  return lines.join("\n")
}
