/**
 * Metadata: IRCv3 `draft/metadata-2` (extensions/metadata.md) for the two buffer keys soju defines (its
 * doc/ext/metadata.md): `soju.im/pinned` and `soju.im/muted`, `1` or `0`, on channel and nick targets of the bound
 * network — the member's own choices, kept by BufferPreferences, which the web client's buffer menu shares
 * (docs/contract.md "Preferences"). Every target of the bound network has both keys: `0` when not chosen (as soju
 * answers), so `SET <key>` without a value sets `0`. The member's own nick has no keys (`max-keys=0`).
 *
 * - The capability value (CapNegotiation.ts) carries the limits, as the extension says: `before-connect` (SUB, UNSUB
 *   and SUBS before registration), `max-subs` (METADATA_MAX_SUBS), `max-keys=0`, `max-value-bytes=1`.
 * - GET, LIST, SET, CLEAR, SUB, UNSUB, SUBS and SYNC, with the extension's replies: 761 RPL_KEYVALUE, 766
 *   RPL_KEYNOTSET, 770/771/772 for subscriptions, `metadata` and `metadata-subs` batches (with `batch`), and the
 *   standard replies `FAIL METADATA INVALID_TARGET | KEY_INVALID | KEY_NO_PERMISSION | VALUE_INVALID | TOO_MANY_SUBS |
 *   SUBCOMMAND_INVALID`; a key of valid form but not one of the two is not set (GET: 766), not settable (SET:
 *   KEY_NO_PERMISSION) and may be subscribed (the extension: any valid key). A read-only sign-in gets
 *   `FAIL METADATA READ_ONLY` for SET and CLEAR.
 * - Notifications: when a buffer's choice changes — here, in the browser, in another IRC client, on another node —
 *   each client of that network subscribed to a key gets `METADATA <target> <key> * <value>`, except the client that
 *   set it, which has its 761 (the extension: no notification of one's own changes). At registration, the empty
 *   `metadata` batch of the member's own nick (before the MOTD's place), then, for subscribed keys, the buffers with
 *   a choice.
 *
 * Without the capability, METADATA is not Belay's: it goes upstream as written (ClientCommands.ts).
 *
 * Concurrency rule: runs on the connection's session fiber only; a connection's subscriptions live in `subscriptions`,
 * keyed by its record, and go with it.
 */
import { Effect } from "effect"
import type { BufferChoice, BufferChoicePatch } from "../schema/Preferences.js"
import type { BufferPreferenceChange } from "../services/preferences/BufferPreferences.js"
import { validTarget } from "../services/preferences/BufferPreferences.js"
import { METADATA_CAP, METADATA_MAX_SUBS } from "./CapNegotiation.js"
import { type Downstream, fail, nextBatchId, numeric, replyLine } from "./Downstream.js"
import type { ListenerDeps } from "./ListenerDeps.js"

export const PINNED = "soju.im/pinned"
export const MUTED = "soju.im/muted"
/** The keys Belay keeps, in the order LIST answers them. */
export const KEYS: ReadonlyArray<string> = [PINNED, MUTED]

/**
 * The extension's key names: `a-z`, `0-9` and `_./-`, not empty; at most 100 characters here, so that what a client
 * subscribes to stays small (METADATA_MAX_SUBS keys) and every reply naming keys fits a line.
 */
const KEY = /^[a-z0-9_./-]{1,100}$/
/** Keys per 770/771/772 line: 15 parameters at most (RFC 2812 §2.3), the nick one of them. */
const KEYS_PER_LINE = 12

/**
 * What the client sent, fit to be named back as a middle parameter (RFC 1459 §2.3.1: not empty, no space, not
 * starting with `:`) and short; else `*`.
 */
const echo = (s: string): string => (s === "" || s.startsWith(":") || /[\s\u0000]/.test(s) ? "*" : s.slice(0, 100))

/** A target METADATA can name: a buffer's (validTarget) that is also a middle parameter. */
const ircTarget = (target: string): boolean => validTarget(target) && !target.startsWith(":") && !target.startsWith("$")

/** Each connection's subscribed keys, in the order they were added. */
const subscriptions = new WeakMap<Downstream, Set<string>>()

const subsOf = (d: Downstream): Set<string> => {
  let set = subscriptions.get(d)
  if (set === undefined) subscriptions.set(d, (set = new Set()))
  return set
}

const valueOf = (choice: BufferChoice, key: string): string => ((key === PINNED ? choice.pinned : choice.muted) ? "1" : "0")

const isSelf = (d: Downstream, target: string) => target === "*" || target.toLowerCase() === d.nick.toLowerCase()

/** Lines of `keys` under `code`, KEYS_PER_LINE at a time. */
const keyLines = (d: Downstream, code: string, keys: ReadonlyArray<string>, batch?: string) => {
  for (let i = 0; i < keys.length; i += KEYS_PER_LINE) {
    replyLine(d, { command: code, params: [d.nick, ...keys.slice(i, i + KEYS_PER_LINE)] }, batch === undefined ? {} : { batch })
  }
}

/** Runs `body` inside a batch of `type` (when the client has `batch`), which gets the batch id. */
const inBatch = <A, E, R>(d: Downstream, type: string, params: ReadonlyArray<string>, body: (batch: string | undefined) => Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    const batch = d.caps.enabled.has("batch") ? nextBatchId(d) : undefined
    if (batch !== undefined) replyLine(d, { command: "BATCH", params: [`+${batch}`, type, ...params] })
    return Effect.ensuring(body(batch), Effect.sync(() => {
      if (batch !== undefined) replyLine(d, { command: "BATCH", params: [`-${batch}`] })
    }))
  })

/** SUB, UNSUB and SUBS: the same before and after registration (`before-connect`). */
const onSubscriptions = (d: Downstream, sub: string, keys: ReadonlyArray<string>): boolean => {
  const subs = subsOf(d)
  switch (sub) {
    case "SUB": {
      const ok: Array<string> = []
      for (const key of keys) {
        if (!KEY.test(key)) {
          fail(d, "METADATA", "KEY_INVALID", [echo(key)], "invalid key")
          continue
        }
        if (!subs.has(key) && subs.size >= METADATA_MAX_SUBS) {
          // The extension: no key after the first one refused is processed, and that one is named.
          fail(d, "METADATA", "TOO_MANY_SUBS", [key], "too many subscriptions")
          break
        }
        subs.add(key)
        ok.push(key)
      }
      keyLines(d, "770", ok)
      return true
    }
    case "UNSUB": {
      const ok: Array<string> = []
      for (const key of keys) {
        if (!KEY.test(key)) {
          fail(d, "METADATA", "KEY_INVALID", [echo(key)], "invalid key")
          continue
        }
        subs.delete(key)
        ok.push(key)
      }
      keyLines(d, "771", ok)
      return true
    }
    case "SUBS": {
      const all = [...subs]
      if (d.caps.enabled.has("batch")) {
        const batch = nextBatchId(d)
        replyLine(d, { command: "BATCH", params: [`+${batch}`, "metadata-subs"] })
        keyLines(d, "772", all, batch)
        replyLine(d, { command: "BATCH", params: [`-${batch}`] })
      } else keyLines(d, "772", all)
      return true
    }
    default:
      return false
  }
}

/** METADATA before registration: only what `before-connect` allows here (subscriptions); true when handled. */
export const onMetadataRegistering = (d: Downstream, params: ReadonlyArray<string>): boolean => {
  if (!d.caps.enabled.has(METADATA_CAP)) return false
  const [target, subcommand, ...rest] = params
  if (target === undefined || subcommand === undefined) {
    numeric(d, "461", "METADATA", "Not enough parameters")
    return true
  }
  const sub = subcommand.toUpperCase()
  if (!isSelf(d, target)) {
    fail(d, "METADATA", "INVALID_TARGET", [echo(target)], "invalid metadata target")
    return true
  }
  if (!onSubscriptions(d, sub, rest)) numeric(d, "451", "You have not registered")
  return true
}

/** `METADATA <target> <subcommand> …` of a registered client with the capability. */
export const onMetadata = (deps: ListenerDeps, d: Downstream, params: ReadonlyArray<string>): Effect.Effect<void> =>
  Effect.gen(function*() {
    const [target, subcommand, ...rest] = params
    if (target === undefined || subcommand === undefined) return numeric(d, "461", "METADATA", "Not enough parameters")
    const sub = subcommand.toUpperCase()
    if (!["GET", "LIST", "SET", "CLEAR", "SUB", "UNSUB", "SUBS", "SYNC"].includes(sub)) {
      return fail(d, "METADATA", "SUBCOMMAND_INVALID", [echo(subcommand)], "invalid subcommand")
    }
    if (sub === "SUB" || sub === "UNSUB" || sub === "SUBS") {
      if (!isSelf(d, target)) return fail(d, "METADATA", "INVALID_TARGET", [echo(target)], "invalid metadata target")
      onSubscriptions(d, sub, rest)
      // The extension: on subscribing, the current values of the key for what the client hears of.
      const added = sub === "SUB" ? KEYS.filter((k) => rest.includes(k) && subsOf(d).has(k)) : []
      if (added.length > 0) yield* sendValues(deps, d, added)
      return
    }
    if (isSelf(d, target)) return yield* onSelf(d, target, sub, rest)
    const network = d.network
    const signedIn = d.signedIn
    if (network === undefined || signedIn === undefined || !ircTarget(target)) {
      return fail(d, "METADATA", "INVALID_TARGET", [echo(target)], "invalid metadata target")
    }
    const status = yield* deps.control.status(network.id)
    const choice = yield* deps.preferences.get(network.id, status.caseMapping, target)
    switch (sub) {
      case "GET":
        if (rest.length === 0) return numeric(d, "461", "METADATA", "Not enough parameters")
        return yield* inBatch(d, "metadata", [target], (batch) =>
          Effect.sync(() => {
            const tags = batch === undefined ? {} : { batch }
            for (const key of rest) {
              if (!KEY.test(key)) replyLine(d, { command: "FAIL", params: ["METADATA", "KEY_INVALID", echo(key), "invalid key"] }, tags)
              else if (KEYS.includes(key)) replyLine(d, { command: "761", params: [d.nick, target, key, "*", valueOf(choice, key)] }, tags)
              else replyLine(d, { command: "766", params: [d.nick, target, key, "key not set"] }, tags)
            }
          }))
      case "LIST":
      case "SYNC":
        return yield* inBatch(d, "metadata", [target], (batch) =>
          Effect.sync(() => {
            const tags = batch === undefined ? {} : { batch }
            // LIST answers every key; SYNC sends what the client is subscribed to, as notifications.
            const keys = sub === "LIST" ? KEYS : KEYS.filter((k) => subsOf(d).has(k))
            for (const key of keys) {
              replyLine(d, sub === "LIST"
                ? { command: "761", params: [d.nick, target, key, "*", valueOf(choice, key)] }
                : { command: "METADATA", params: [target, key, "*", valueOf(choice, key)] }, tags)
            }
          }))
      case "SET": {
        const [key, value] = rest
        if (key === undefined) return numeric(d, "461", "METADATA", "Not enough parameters")
        if (!KEY.test(key)) return fail(d, "METADATA", "KEY_INVALID", [echo(key)], "invalid key")
        if (!KEYS.includes(key)) return fail(d, "METADATA", "KEY_NO_PERMISSION", [echo(target), echo(key)], "permission denied")
        if (value !== undefined && value !== "0" && value !== "1") return fail(d, "METADATA", "VALUE_INVALID", [], "value must be 0 or 1")
        if (signedIn.readOnly) return fail(d, "METADATA", "READ_ONLY", [echo(target)], "This sign-in may only read")
        const on = value === "1"
        const patch: BufferChoicePatch = key === PINNED ? { pinned: on } : { muted: on }
        const stored = yield* Effect.either(deps.preferences.set(signedIn.accountId, network.id, status.caseMapping, target, patch, d.id))
        if (stored._tag === "Left") return refused(d, target, stored.left)
        return replyLine(d, { command: "761", params: [d.nick, target, key, "*", valueOf(stored.right, key)] })
      }
      case "CLEAR": {
        if (signedIn.readOnly) return fail(d, "METADATA", "READ_ONLY", [echo(target)], "This sign-in may only read")
        const stored = yield* Effect.either(
          deps.preferences.set(signedIn.accountId, network.id, status.caseMapping, target, { pinned: false, muted: false }, d.id)
        )
        if (stored._tag === "Left") return refused(d, target, stored.left)
        return yield* inBatch(d, "metadata", [target], (batch) =>
          Effect.sync(() => {
            for (const key of KEYS) {
              replyLine(d, { command: "761", params: [d.nick, target, key, "*", "0"] }, batch === undefined ? {} : { batch })
            }
          }))
      }
    }
  })

/** The member's own nick (or `*`): no keys are kept there. */
const onSelf = (d: Downstream, target: string, sub: string, rest: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    switch (sub) {
      case "GET":
        if (rest.length === 0) return numeric(d, "461", "METADATA", "Not enough parameters")
        return yield* inBatch(d, "metadata", [target], (batch) =>
          Effect.sync(() => {
            const tags = batch === undefined ? {} : { batch }
            for (const key of rest) {
              if (!KEY.test(key)) replyLine(d, { command: "FAIL", params: ["METADATA", "KEY_INVALID", echo(key), "invalid key"] }, tags)
              else replyLine(d, { command: "766", params: [d.nick, target, key, "key not set"] }, tags)
            }
          }))
      case "LIST":
      case "SYNC":
      case "CLEAR":
        return yield* inBatch(d, "metadata", [target], () => Effect.void)
      default: {
        // SET: keys on the member's own nick are not offered (max-keys=0).
        const key = rest[0]
        if (key === undefined) return numeric(d, "461", "METADATA", "Not enough parameters")
        if (!KEY.test(key)) return fail(d, "METADATA", "KEY_INVALID", [echo(key)], "invalid key")
        return fail(d, "METADATA", "KEY_NO_PERMISSION", [echo(target), echo(key)], "permission denied")
      }
    }
  })

const refused = (d: Downstream, target: string, error: { readonly _tag: string; readonly message: string }) =>
  error._tag === "PreferencesFull"
    ? fail(d, "METADATA", "LIMIT_REACHED", [echo(target)], error.message)
    : fail(d, "METADATA", "INVALID_TARGET", [echo(target)], error.message)

/**
 * At registration, for a client that negotiated the capability: its own (empty) metadata, as the extension requires
 * before the end of the MOTD.
 */
export const sendOwnMetadata = (d: Downstream): void => {
  if (!d.caps.enabled.has(METADATA_CAP)) return
  if (!d.caps.enabled.has("batch")) return
  const batch = nextBatchId(d)
  replyLine(d, { command: "BATCH", params: [`+${batch}`, "metadata", d.nick] })
  replyLine(d, { command: "BATCH", params: [`-${batch}`] })
}

/** After the welcome: the keys subscribed before registration, for every buffer of the network with a choice. */
export const sendSubscribedMetadata = (deps: ListenerDeps, d: Downstream): Effect.Effect<void> =>
  sendValues(deps, d, KEYS.filter((k) => subsOf(d).has(k)))

/** `keys` of every buffer of the bound network with a choice, in a `metadata` batch. */
const sendValues = (deps: ListenerDeps, d: Downstream, keys: ReadonlyArray<string>): Effect.Effect<void> =>
  Effect.gen(function*() {
    const network = d.network
    if (network === undefined || keys.length === 0 || !d.caps.enabled.has(METADATA_CAP)) return
    const rows = yield* deps.preferences.ofNetwork(network.id)
    if (rows.length === 0) return
    yield* inBatch(d, "metadata", ["*"], (batch) =>
      Effect.sync(() => {
        for (const row of rows) {
          if (!ircTarget(row.target)) continue
          for (const key of keys) {
            replyLine(d, { command: "METADATA", params: [row.target, key, "*", valueOf(row, key)] }, batch === undefined ? {} : { batch })
          }
        }
      }))
  })

/** A buffer's choice changed (BufferPreferences.changes): METADATA for each key this client subscribed to. */
export const onPreferenceChange = (d: Downstream, change: BufferPreferenceChange): void => {
  if (change.networkId !== d.network?.id || change.origin === d.id || !d.caps.enabled.has(METADATA_CAP)) return
  // A buffer only the web has (the server buffer `:server:<id>`) is no IRC target.
  if (!ircTarget(change.target)) return
  for (const key of KEYS) {
    if (subsOf(d).has(key)) replyLine(d, { command: "METADATA", params: [change.target, key, "*", valueOf(change, key)] })
  }
}
